package reclaim

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/resources"
)

func cpuPod(name, cpu string, prio int32, group string) *v1.Pod {
	p := mkPod(name)
	p.Spec.Priority = ptr.To(prio)
	p.Spec.Containers = []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}
	if group != "" {
		p.Labels = map[string]string{v1alpha1.PodGroupLabel: group}
	}
	return p
}

func podInfo(t *testing.T, p *v1.Pod) fwk.PodInfo {
	t.Helper()
	pi, err := framework.NewPodInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	return pi
}

// A victim still terminating frees its room for the preemptor it is evicted
// for, who is nominated to the node: the next preemptor sees the room left
// over, not that room minus the nomination a second time. Before, the
// victim's room counted as used and the nominated preemptor was subtracted
// again, and later preemptors evicted extra pods for room already on its
// way.
func TestTerminatingVictimsRoomIsCountedOnce(t *testing.T) {
	victim := cpuPod("victim", "2", 1, "")
	victim.DeletionTimestamp = &metav1.Time{}
	other := cpuPod("other", "2", 1, "")
	node := framework.NewNodeInfo(victim, other)
	node.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourcePods: resource.MustParse("110")}}})
	first := cpuPod("first", "1", 100, "") // nominated to the victim's room
	second := cpuPod("second", "1", 100, "")

	gone := map[types.UID]bool{}
	free := roomFor(second, nil, node, []fwk.PodInfo{podInfo(t, first)}, nil, gone)
	if got := free[resources.CPU]; got != 1000 {
		t.Errorf("room for the second pod = %dm cpu, want 1000m (the victim's 2 cpu less the first pod's 1)", got)
	}
	if !gone[victim.UID] || gone[other.UID] {
		t.Errorf("gone = %v, want the terminating victim only", gone)
	}

	// A member of a gang does not lose room to its own nominated siblings
	// that are members of its plan: the plan places them.
	sib, member := cpuPod("g-1", "2", 100, "g"), cpuPod("g-0", "2", 100, "g")
	planned := map[types.UID]bool{member.UID: true, sib.UID: true}
	free = roomFor(member, planned, node, []fwk.PodInfo{podInfo(t, sib), podInfo(t, first)}, nil, map[types.UID]bool{})
	if got := free[resources.CPU]; got != 1000 {
		t.Errorf("room for a gang member = %dm cpu, want 1000m (its nominated sibling not subtracted)", got)
	}
}
