package cache

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/admission"
)

// A pod recreated under its name reaches ApplyPod as an update whose uid
// changed: the old pod leaves its gang and every aggregate before the new
// one is counted, and DeletePod then leaves nothing behind.
func TestApplyPodReplacedUnderItsName(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("a"))
	old := mkPod("ns", "w", "g", inQueue("a"), boundTo("n1"), cpu("3"), withUID("u1"), scheduledBy(testProfile))
	c.ApplyPod(logger, nil, old)
	c.mu.RLock()
	_, member := c.memberOf["u1"]
	acct := c.adm.Pods["u1"]
	c.mu.RUnlock()
	if !member || acct == nil || !acct.Bound {
		t.Fatalf("after the add: member %v, account %+v; want a bound member", member, acct)
	}

	now := mkPod("ns", "w", "", inQueue("a"), cpu("1"), withUID("u2"), scheduledBy(testProfile))
	c.ApplyPod(logger, old, now)
	c.mu.RLock()
	_, member = c.memberOf["u1"]
	_, oldAcct := c.adm.Pods["u1"]
	acct = c.adm.Pods["u2"]
	used := c.adm.Used[string(v1.ResourceCPU)]
	_, unit := c.adm.Units[admission.PodUnitKey(now)]
	c.mu.RUnlock()
	if member || oldAcct {
		t.Errorf("the replaced pod is still counted: member %v, account %v", member, oldAcct)
	}
	if acct == nil || acct.Bound || acct.Unit != admission.PodUnitKey(now) || !unit {
		t.Errorf("the new pod's account %+v, unit %v; want an unbound singleton with its unit", acct, unit)
	}
	if used != 0 {
		t.Errorf("bound cpu %d after the bound pod was replaced, want 0", used)
	}

	c.DeletePod(logger, now)
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.adm.Pods) != 0 || c.adm.Units[admission.PodUnitKey(now)] != nil {
		t.Errorf("after the delete: %d accounts, unit %v; want none", len(c.adm.Pods), c.adm.Units[admission.PodUnitKey(now)])
	}
}

// The queue sort reads a pod's group from its admission account, worked
// out when the pod event came: a member of a gang asked for by annotation
// (whose group name GroupKeyOf builds from its owner) is compared without
// allocating, and gets its group's order.
func TestSortInfoReadsTheAccount(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("a"))
	p := mkPod("ns", "p0", "", ours, inQueue("a"), ownedBy("Job", "train"), minMemberAnn("2"), priority(7))
	c.ApplyPod(logger, nil, p)
	info := c.SortInfo(p)
	if info.Namespace != "ns" || info.Name != "job-train" || info.Priority != 7 {
		t.Errorf("SortInfo = %+v, want group ns/job-train at priority 7", info)
	}
	if n := testing.AllocsPerRun(100, func() { c.SortInfo(p) }); n != 0 {
		t.Errorf("SortInfo allocates %v times per call, want 0", n)
	}
}
