package admission

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/dialect"
)

// Queues that hold placement. A Caldera Queue that is Closed stops
// admission only: what it admitted still runs. A dialect's queue may stop
// more (Volcano allocates nothing in a queue that is not Open, admitted
// jobs' pods included): its adapter marks the model with
// dialect.HoldPlacementAnnotation, and then the queue's admitted groups'
// members not yet placed wait in PreEnqueue until it opens again. Members
// placed already keep their nodes.

// holdsPlacement reports whether the model q holds placement.
func holdsPlacement(q *qapi.Queue) bool {
	return q != nil && q.Annotations[dialect.HoldPlacementAnnotation] == "true"
}

// noteHoldLocked records whether queue q (nil: deleted) of name holds
// placement, and returns the pods to activate when it stopped holding:
// the unplaced members of its admitted groups. O(units) when it flips,
// which is rare; O(1) otherwise.
func (a *State) noteHoldLocked(name string, q *qapi.Queue) map[string]*v1.Pod {
	held := holdsPlacement(q)
	if held == a.held[name] {
		return nil
	}
	if held {
		if a.held == nil {
			a.held = map[string]bool{}
		}
		a.held[name] = true
		return nil
	}
	delete(a.held, name)
	act := map[string]*v1.Pod{}
	for _, u := range a.Units {
		switch {
		case !u.Admitted || u.Queue != name:
		case u.Gang != nil:
			for k, p := range u.Gang.PendingPodsLocked() {
				act[k] = p
			}
		case u.Pod.Spec.NodeName == "":
			act[u.Pod.Namespace+"/"+u.Pod.Name] = u.Pod
		}
	}
	return act
}

// heldMessage is why an admitted group's pod waits in a queue that holds
// placement; "" when it need not.
func (a *State) heldMessage(u *Unit, pod *v1.Pod) string {
	if !a.held[u.Queue] || pod.Spec.NodeName != "" {
		return ""
	}
	return fmt.Sprintf("queue %s is not Open: nothing new is placed in it until it opens", u.Queue)
}
