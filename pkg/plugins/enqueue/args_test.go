package enqueue

import (
	"testing"
	"time"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/plugins/args/argstest"
)

func TestNewRejectsBadArgs(t *testing.T) {
	argstest.Refused(t, New, nil, []argstest.Bad{
		{Name: "overcommit below 1", Raw: `{"overcommitFactor": 0.9}`, Field: "overcommitFactor"},
		{Name: "negative starvation threshold", Raw: `{"starvationThresholdSeconds": -1}`, Field: "starvationThresholdSeconds"},
		{Name: "zero admission period", Raw: `{"admissionPeriodSeconds": 0}`, Field: "admissionPeriodSeconds"},
		{Name: "negative reservations", Raw: `{"reservationsPerQueue": -1}`, Field: "reservationsPerQueue"},
		{Name: "too many reservations", Raw: `{"reservationsPerQueue": 17}`, Field: "reservationsPerQueue"},
		{Name: "misspelt field", Raw: `{"defaultQeue": "x"}`, Field: "defaultQeue"},
	})
}

func TestArgsDefaults(t *testing.T) {
	var a Args
	a.SetDefaults()
	if err := a.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	want := admission.Options{DefaultQueue: "default", AdmitSingletons: true, OvercommitFactor: 1.2,
		StarvationThreshold: 300 * time.Second, Period: 2 * time.Second, CheckResourceQuota: true, ReservationsPerQueue: 1,
		EvictOverruns: true}
	if got := a.Options(); got != want {
		t.Fatalf("Options() = %+v, want %+v", got, want)
	}
	off := int64(0)
	b := Args{StarvationThresholdSeconds: &off}
	b.SetDefaults()
	if got := b.Options().StarvationThreshold; got >= 0 {
		t.Errorf("starvationThresholdSeconds 0 should turn the guard off (negative threshold), got %v", got)
	}
	yes := true
	c := Args{LendIdleRoom: &yes}
	c.SetDefaults()
	if !c.Options().LendIdleRoom {
		t.Errorf("lendIdleRoom true should turn lending on")
	}
	none := int32(0)
	d := Args{ReservationsPerQueue: &none}
	d.SetDefaults()
	if got := d.Options().ReservationsPerQueue; got >= 0 {
		t.Errorf("reservationsPerQueue 0 should turn reservations off (negative), got %d", got)
	}
	no := false
	e := Args{EvictOverruns: &no}
	e.SetDefaults()
	if e.Options().EvictOverruns {
		t.Errorf("evictOverruns false should turn overrun evictions off")
	}
}
