package reclaim

import (
	"context"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/convert"
	policy "github.com/caldera-sched/caldera/pkg/reclaim"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// plan decides the victims for pod, or says why there are none.
func (pl *Reclaim) plan(ctx context.Context, state fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*plan, string) {
	lister := pl.handle.SnapshotSharedLister().NodeInfos()
	nodes, err := lister.List()
	if err != nil {
		return nil, err.Error()
	}
	potential, err := m.NodesForStatusCode(lister, fwk.Unschedulable)
	if err != nil {
		return nil, err.Error()
	}
	if len(potential) == 0 {
		return nil, "evicting pods would not help on any node"
	}
	eligible := make(map[string]bool, len(potential))
	for _, n := range potential {
		eligible[n.Node().Name] = true
	}
	running := runningPods(nodes)
	leaving := pl.evictions.InFlight(running)
	in, ok, why := pl.cache.ReclaimInput(pod, running, func(p *v1.Pod) bool { return leaving[p.UID] })
	if !ok {
		return nil, why
	}
	if len(in.Deficits) > 0 {
		// CalderaGang's PreFilter failed the pod for its queue's
		// capability, so every node carries that one status. Which nodes
		// the pod may use (now, or once room is made) is found by running
		// the filters on each, as upstream's dry run does.
		eligible = pl.usable(ctx, state, pod, nodes)
	}
	pl.markBudgets(&in, running)
	in.Nodes = make([]policy.Node, len(nodes))
	gone := map[types.UID]bool{}
	planned := make(map[types.UID]bool, len(in.Preemptor.MemberIDs))
	for _, id := range in.Preemptor.MemberIDs {
		planned[types.UID(id)] = true
	}
	for i, n := range nodes {
		free := roomFor(pod, planned, n, pl.handle.NominatedPodsForNode(n.Node().Name), leaving, gone)
		in.Nodes[i] = policy.Node{Name: n.Node().Name, Free: free, Eligible: eligible[n.Node().Name]}
	}
	in.Options = pl.opts
	in.Options.Now = time.Now()
	decided, ok, why := policy.Decide(in)
	if !ok {
		return nil, why
	}
	p, ok := pl.start(pod, in, decided, running)
	if !ok {
		return nil, "the chosen victims are being evicted for another pod already"
	}
	p.leaving = gone
	p.potential = int32(len(potential))
	p.at = indexOf(potential, decided.Node)
	klog.FromContext(ctx).V(4).Info("Reclaim plan", "pod", klog.KObj(pod), "action", decided.Mode.String(), "node", decided.Node, "victims", len(p.victims))
	return p, ""
}

// runningPods lists the pods on nodes, in one slice sized up front.
func runningPods(nodes []fwk.NodeInfo) []*v1.Pod {
	size := 0
	for _, n := range nodes {
		size += len(n.GetPods())
	}
	running := make([]*v1.Pod, 0, size)
	for _, n := range nodes {
		for _, pi := range n.GetPods() {
			running = append(running, pi.GetPod())
		}
	}
	return running
}

// indexOf is the index of the node named name among nodes, 0 when none is:
// the Evaluator's dry run then starts at the first node.
func indexOf(nodes []fwk.NodeInfo, name string) int32 {
	for i, n := range nodes {
		if n.Node().Name == name {
			return int32(i)
		}
	}
	return 0
}

// usable returns the nodes where the scheduler's filters pass for pod, or
// fail only for a reason evictions can resolve. O(nodes x filters), as one
// scheduling cycle; it runs in PostFilter only.
func (pl *Reclaim) usable(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) map[string]bool {
	out := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		st := pl.handle.RunFilterPluginsWithNominatedPods(ctx, state, pod, n)
		if st.IsSuccess() || st.Code() == fwk.Unschedulable {
			out[n.Node().Name] = true
		}
	}
	return out
}

// roomFor is the room node n offers pod's plan: its free room, plus what
// the pods already leaving it (terminating, or in leaving: evicted for an
// earlier plan) hold, minus what is nominated to it. The leaving pods are
// added to gone. planned are the pods the plan places (the preemptor's
// members, by UID), whose nominations are not subtracted.
//
// A leaving pod's room is the room of the preemptor it is evicted for, who
// is nominated here and subtracted: counted as used as well, every later
// preemptor would evict for it a second time. Room nominated to other pods
// is not free, or the next preemptor would count it and evict nothing; like
// the scheduler's filters, only pods of at least pod's priority hold their
// nomination. The plan's own members are not subtracted: it places them.
// A sibling it does not place (one beyond what the gang still needs, or any
// extra of a started gang) keeps its nominated room: counted as free, the
// plan answered "fits without evictions" for room only the sibling could
// use, the gang was released, and its members waited out the free-room-only
// window.
func roomFor(pod *v1.Pod, planned map[types.UID]bool, n fwk.NodeInfo, nominated []fwk.PodInfo, leaving, gone map[types.UID]bool) resources.List {
	free := convert.NodeFree(n)
	for _, pi := range n.GetPods() {
		if q := pi.GetPod(); q.DeletionTimestamp != nil || leaving[q.UID] {
			free.Add(convert.PodRequest(q))
			gone[q.UID] = true
		}
	}
	if len(nominated) == 0 {
		return free // most nodes: the pod's group is not needed
	}
	for _, np := range nominated {
		q := np.GetPod()
		if q.UID == pod.UID || planned[q.UID] || corev1helpers.PodPriority(q) < corev1helpers.PodPriority(pod) {
			continue
		}
		free.Sub(convert.PodRequest(q))
	}
	return free
}

// start records a decision's evictions in the cache, where every profile
// sees them from now until the pods leave: a preemptor planning while they
// are in flight neither picks the same victims nor counts their room twice.
// It fails when another preemptor claimed one of the victims since in was
// read.
func (pl *Reclaim) start(pod *v1.Pod, in policy.Input, decided policy.Plan, running []*v1.Pod) (*plan, bool) {
	p := &plan{node: decided.Node, mode: decided.Mode, group: in.Preemptor.Group}
	if p.group != "" {
		p.members = make(map[types.UID]string, len(in.Preemptor.MemberIDs))
		for i, id := range in.Preemptor.MemberIDs {
			if i < len(decided.Placement) {
				p.members[types.UID(id)] = decided.Placement[i]
			}
		}
	}
	// The victims' pods, found by a scan for their few IDs rather than
	// an index of every running pod's "namespace/name" (one string per
	// running pod per plan: 10,000 in W7 at 5000 nodes). A namespace
	// holds no "/", so the ID's first one splits it.
	type name struct{ namespace, name string }
	want := make(map[name]*v1.Pod, len(decided.Victims))
	for _, v := range decided.Victims {
		ns, n, _ := strings.Cut(in.Pods[v].ID, "/")
		want[name{ns, n}] = nil
	}
	for found, i := 0, 0; found < len(want) && i < len(running); i++ {
		r := running[i]
		k := name{r.Namespace, r.Name}
		if v, ok := want[k]; ok && v == nil {
			want[k] = r
			found++
		}
	}
	evs := make([]admission.Eviction, 0, len(decided.Victims))
	for _, v := range decided.Victims {
		vp := in.Pods[v]
		ns, n, _ := strings.Cut(vp.ID, "/")
		victim := want[name{ns, n}]
		p.victims = append(p.victims, victim)
		evs = append(evs, admission.Eviction{Victim: victim.UID, Preemptor: pod.UID, PreemptorName: pod.Namespace + "/" + pod.Name,
			Group: in.Preemptor.Group, Mode: decided.Mode, Queue: in.Preemptor.Queue, VictimQueue: vp.Queue})
	}
	return p, pl.evictions.Start(evs, in.Options.Now)
}
