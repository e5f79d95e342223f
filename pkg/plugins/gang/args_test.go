package gang

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/caldera-sched/caldera/pkg/cache"
)

// profileHandle answers only ProfileName: New must refuse bad args before it
// touches anything else of the handle.
type profileHandle struct{ fwk.Handle }

func (profileHandle) ProfileName() string { return "caldera-scheduler" }

func TestNewRejectsBadArgs(t *testing.T) {
	tests := []struct {
		name, raw, wantField string
	}{
		{"negative permit timeout", `{"permitWaitingTimeSeconds": -1}`, "permitWaitingTimeSeconds"},
		{"zero permit timeout", `{"permitWaitingTimeSeconds": 0}`, "permitWaitingTimeSeconds"},
		{"negative backoff", `{"podGroupBackoffSeconds": -2}`, "podGroupBackoffSeconds"},
		{"cap below backoff", `{"podGroupBackoffSeconds": 10, "podGroupMaxBackoffSeconds": 5}`, "podGroupMaxBackoffSeconds"},
		{"zero sync period", `{"statusSyncPeriodSeconds": 0}`, "statusSyncPeriodSeconds"},
		{"misspelt field", `{"permitWaitTimeSeconds": 5}`, "permitWaitTimeSeconds"},
		{"wrong type", `{"permitWaitingTimeSeconds": "soon"}`, "permitWaitingTimeSeconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &runtime.Unknown{Raw: []byte(tt.raw), ContentType: runtime.ContentTypeJSON}
			_, err := New(context.Background(), obj, profileHandle{}, cache.NewProvider())
			if err == nil || !strings.Contains(err.Error(), tt.wantField) {
				t.Fatalf("New(%s) error = %v, want one naming %s", tt.raw, err, tt.wantField)
			}
		})
	}
}

func TestArgsDefaults(t *testing.T) {
	var a Args
	a.SetDefaults("batch")
	if err := a.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	got := []int64{*a.PermitWaitingTimeSeconds, *a.PodGroupBackoffSeconds, *a.PodGroupMaxBackoffSeconds, *a.StatusSyncPeriodSeconds}
	want := []int64{60, 1, 30, 1}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("default %d = %d, want %d", i, got[i], want[i])
		}
	}
	if a.StatusLeaseNamespace != "kube-system" || a.StatusLeaseName != "batch-status" {
		t.Errorf("lease = %s/%s, want kube-system/batch-status", a.StatusLeaseNamespace, a.StatusLeaseName)
	}
	zero := int64(0)
	b := Args{PodGroupBackoffSeconds: &zero, PodGroupMaxBackoffSeconds: &zero}
	b.SetDefaults("batch")
	if err := b.Validate(); err != nil {
		t.Errorf("backoff disabled (0/0) should be valid: %v", err)
	}
}
