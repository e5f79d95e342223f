package queue

import (
	"strings"
	"testing"
)

func TestDecisionMessages(t *testing.T) {
	tests := []struct {
		d    Decision
		want string
	}{
		{Decision{Admitted: true, Queue: "q"}, "admitted to queue q"},
		{Decision{Admitted: true, HeadException: true, Queue: "q"}, "admitted to queue q at its head, although the request exceeds the deserved share"},
		{Decision{Queue: "q"}, "waiting for admission to queue q"},
		{Decision{Check: CheckCapability, Queue: "q", Resource: "cpu", Request: 1500, Available: 250}, "queue q: cpu request 1500m exceeds remaining capability 250m"},
		{Decision{Check: CheckCapability, Queue: "q", Resource: "memory", Request: 10, Available: 8, Permanent: true}, "queue q: memory request 10 exceeds capability 8"},
		{Decision{Check: CheckFairness, Queue: "q", Resource: "cpu", Request: 3000, Available: 1000}, "queue q: cpu request 3 exceeds remaining deserved share 1"},
		{Decision{Check: CheckCluster, Resource: "cpu", Request: 3000, Available: 0}, "cluster: cpu request 3 exceeds idle 0"},
		{Decision{Check: CheckCluster, Resource: "cpu", Request: 3000, Available: 2000, Permanent: true}, "cluster: cpu request 3 exceeds total allocatable 2 (with overcommit)"},
		{Decision{Check: CheckQuota, Detail: "exceeded quota"}, "exceeded quota"},
		{Decision{Check: CheckQuota}, "resource quota exceeded"},
		{Decision{Check: CheckMembers, Members: 1, MinMember: 4}, "waiting for members: 1/4"},
		{Decision{Check: CheckQueueMissing, Queue: "x"}, "queue x not found"},
		{Decision{Check: CheckQueueClosed, Queue: "x"}, "queue x is closed"},
		{Decision{Check: CheckQueueBroken, Queue: "x", Detail: "parent cycle: x -> x"}, "queue x: parent cycle: x -> x"},
		{Decision{Check: CheckReserved, Queue: "q", Behind: k("ns/a"), Since: t0}, "queue q is reserved for pg:ns/a, at its head since 2030-01-01T00:00:00Z"},
		{Decision{Check: CheckWaiting, Queue: "q", Behind: k("ns/a")}, "queue q: waiting behind pg:ns/a"},
		{Decision{Check: Check(200)}, "Check(200)"},
	}
	for _, tt := range tests {
		if got := tt.d.Message(); got != tt.want {
			t.Errorf("%+v.Message() = %q, want %q", tt.d, got, tt.want)
		}
	}
	for c := CheckNone; c <= CheckWaiting; c++ {
		if s := c.String(); s == "" || strings.HasPrefix(s, "Check(") {
			t.Errorf("Check %d has no name", c)
		}
	}
}

// The refusal kind of every admission check: only what more room in the
// cluster cures waits for room (and so reaches cluster autoscalers).
func TestDecisionWaitsForRoom(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    Decision
		want bool
	}{
		{name: "admitted", d: Decision{Admitted: true}},
		{name: "members missing", d: Decision{Check: CheckMembers}},
		{name: "queue missing", d: Decision{Check: CheckQueueMissing}},
		{name: "queue broken", d: Decision{Check: CheckQueueBroken}},
		{name: "queue closed", d: Decision{Check: CheckQueueClosed}},
		{name: "deserved share", d: Decision{Check: CheckFairness}},
		{name: "namespace ResourceQuota", d: Decision{Check: CheckQuota}},
		{name: "held for the head", d: Decision{Check: CheckReserved}},
		{name: "behind the head", d: Decision{Check: CheckWaiting}},
		{name: "no room in the cluster", d: Decision{Check: CheckCluster, ClusterBound: true}, want: true},
		{name: "larger than the cluster and the queue's own capability", d: Decision{Check: CheckCluster, Permanent: true}},
		{name: "members not placeable on today's nodes", d: Decision{Check: CheckPlacement}, want: true},
		{name: "the queue's own capability binds", d: Decision{Check: CheckCapability}},
		{name: "the cluster's size binds the capability", d: Decision{Check: CheckCapability, ClusterBound: true}, want: true},
	} {
		if got := tc.d.WaitsForRoom(); got != tc.want {
			t.Errorf("%s: WaitsForRoom() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
