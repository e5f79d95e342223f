package reclaim

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
		{"negative minimum runtime", `{"minVictimRuntimeSeconds": -1}`, "minVictimRuntimeSeconds"},
		{"misspelt field", `{"enableReclam": false}`, "enableReclam"},
		{"wrong type", `{"enablePreemption": "yes"}`, "enablePreemption"},
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
	if !*a.EnableReclaim || !*a.EnablePreemption || a.minRuntime() != 0 {
		t.Fatalf("defaults: reclaim %v, preemption %v, minimum runtime %v; want true, true, 0",
			*a.EnableReclaim, *a.EnablePreemption, a.minRuntime())
	}
	off, sixty := false, int64(60)
	b := Args{EnableReclaim: &off, MinVictimRuntimeSeconds: &sixty}
	b.SetDefaults()
	if *b.EnableReclaim || !*b.EnablePreemption || b.minRuntime() != time.Minute {
		t.Fatalf("set values lost: reclaim %v, preemption %v, minimum runtime %v", *b.EnableReclaim, *b.EnablePreemption, b.minRuntime())
	}
}
