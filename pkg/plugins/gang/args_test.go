package gang

import (
	"testing"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/caldera-sched/caldera/pkg/plugins/args/argstest"
)

// profileHandle answers only ProfileName: New must refuse bad args before it
// touches anything else of the handle.
type profileHandle struct{ fwk.Handle }

func (profileHandle) ProfileName() string { return "caldera-scheduler" }

func TestNewRejectsBadArgs(t *testing.T) {
	argstest.Refused(t, New, profileHandle{}, []argstest.Bad{
		{Name: "negative permit timeout", Raw: `{"permitWaitingTimeSeconds": -1}`, Field: "permitWaitingTimeSeconds"},
		{Name: "zero permit timeout", Raw: `{"permitWaitingTimeSeconds": 0}`, Field: "permitWaitingTimeSeconds"},
		{Name: "negative backoff", Raw: `{"podGroupBackoffSeconds": -2}`, Field: "podGroupBackoffSeconds"},
		{Name: "cap below backoff", Raw: `{"podGroupBackoffSeconds": 10, "podGroupMaxBackoffSeconds": 5}`, Field: "podGroupMaxBackoffSeconds"},
		{Name: "zero sync period", Raw: `{"statusSyncPeriodSeconds": 0}`, Field: "statusSyncPeriodSeconds"},
		{Name: "misspelt field", Raw: `{"permitWaitTimeSeconds": 5}`, Field: "permitWaitTimeSeconds"},
		{Name: "wrong type", Raw: `{"permitWaitingTimeSeconds": "soon"}`, Field: "permitWaitingTimeSeconds"},
		// The status Lease mode is gone; a config from before says so at start-up.
		{Name: "removed status lease", Raw: `{"statusLeaseName": "batch-status"}`, Field: "statusLeaseName"},
	})
}

func TestArgsDefaults(t *testing.T) {
	var a Args
	a.SetDefaults()
	if err := a.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	got := []int64{*a.PermitWaitingTimeSeconds, *a.PodGroupBackoffSeconds, *a.PodGroupMaxBackoffSeconds, *a.StatusSyncPeriodSeconds}
	want := []int64{60, 1, 10, 1}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("default %d = %d, want %d", i, got[i], want[i])
		}
	}
	zero := int64(0)
	b := Args{PodGroupBackoffSeconds: &zero, PodGroupMaxBackoffSeconds: &zero}
	b.SetDefaults()
	if err := b.Validate(); err != nil {
		t.Errorf("backoff disabled (0/0) should be valid: %v", err)
	}
}
