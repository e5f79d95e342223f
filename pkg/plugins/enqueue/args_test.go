package enqueue

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/caldera-sched/caldera/pkg/cache"
)

func TestNewRejectsBadArgs(t *testing.T) {
	tests := []struct {
		name, raw, wantField string
	}{
		{"overcommit below 1", `{"overcommitFactor": 0.9}`, "overcommitFactor"},
		{"negative starvation threshold", `{"starvationThresholdSeconds": -1}`, "starvationThresholdSeconds"},
		{"zero admission period", `{"admissionPeriodSeconds": 0}`, "admissionPeriodSeconds"},
		{"misspelt field", `{"defaultQeue": "x"}`, "defaultQeue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &runtime.Unknown{Raw: []byte(tt.raw), ContentType: runtime.ContentTypeJSON}
			// A nil handle: New must refuse bad args before touching it.
			_, err := New(context.Background(), obj, nil, cache.NewProvider())
			if err == nil || !strings.Contains(err.Error(), tt.wantField) {
				t.Fatalf("New(%s) error = %v, want one naming %s", tt.raw, err, tt.wantField)
			}
		})
	}
}

func TestArgsDefaults(t *testing.T) {
	var a Args
	a.SetDefaults()
	if err := a.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	want := cache.AdmissionOptions{DefaultQueue: "default", AdmitSingletons: true, OvercommitFactor: 1.2,
		StarvationThreshold: 300 * time.Second, Period: 2 * time.Second, CheckResourceQuota: true}
	if got := a.Options(); got != want {
		t.Fatalf("Options() = %+v, want %+v", got, want)
	}
	off := int64(0)
	b := Args{StarvationThresholdSeconds: &off}
	b.SetDefaults()
	if got := b.Options().StarvationThreshold; got >= 0 {
		t.Errorf("starvationThresholdSeconds 0 should turn the guard off (negative threshold), got %v", got)
	}
}
