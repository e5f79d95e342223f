package reclaim

import (
	"testing"
	"time"

	"github.com/caldera-sched/caldera/pkg/plugins/args/argstest"
)

func TestNewRejectsBadArgs(t *testing.T) {
	argstest.Refused(t, New, nil, []argstest.Bad{
		{Name: "negative minimum runtime", Raw: `{"minVictimRuntimeSeconds": -1}`, Field: "minVictimRuntimeSeconds"},
		{Name: "misspelt field", Raw: `{"enableReclam": false}`, Field: "enableReclam"},
		{Name: "wrong type", Raw: `{"enablePreemption": "yes"}`, Field: "enablePreemption"},
	})
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
