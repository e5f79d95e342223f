package queue

import (
	"strings"
	"testing"

	"github.com/caldera-sched/caldera/pkg/resources"
)

func TestFitsQuotas(t *testing.T) {
	cpu4 := Quota{Name: "compute", Hard: resources.List{"cpu": 4000}, Used: resources.List{"cpu": 2000}}
	tests := []struct {
		name                  string
		quotas                []Quota
		request, own, earlier resources.List
		ok                    bool
		msg                   string
	}{
		{name: "no quota", request: resources.List{"cpu": 100000}, ok: true},
		{name: "own pods already charged are taken out", quotas: []Quota{cpu4},
			request: resources.List{"cpu": 4000}, own: resources.List{"cpu": 2000}, ok: true},
		{name: "minimum above what the quota leaves", quotas: []Quota{cpu4},
			request: resources.List{"cpu": 6000}, own: resources.List{"cpu": 2000},
			msg: "namespace ns: ResourceQuota compute: cpu needs 6, quota allows 4 (used 2)"},
		{name: "earlier admissions in the pass count", quotas: []Quota{cpu4},
			request: resources.List{"cpu": 2000}, earlier: resources.List{"cpu": 1000},
			msg: "namespace ns: ResourceQuota compute: cpu needs 2, quota allows 4 (used 2)"},
		{name: "unrequested resources are not compared", quotas: []Quota{{Name: "mem", Hard: resources.List{"memory": 1}, Used: resources.List{"memory": 5}}},
			request: resources.List{"cpu": 1000}, ok: true},
		{name: "every quota must hold", quotas: []Quota{cpu4, {Name: "gpus", Hard: resources.List{"nvidia.com/gpu": 2}}},
			request: resources.List{"cpu": 1000, "nvidia.com/gpu": 3},
			msg:     "namespace ns: ResourceQuota gpus: nvidia.com/gpu needs 3, quota allows 2 (used 0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, msg := FitsQuotas("ns", tt.quotas, tt.request, tt.own, tt.earlier)
			if ok != (tt.msg == "") || (tt.msg != "" && !strings.EqualFold(msg, tt.msg)) {
				t.Fatalf("FitsQuotas = %v %q, want ok=%v %q", ok, msg, tt.msg == "", tt.msg)
			}
		})
	}
}
