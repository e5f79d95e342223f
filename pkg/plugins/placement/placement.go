// Package placement is the CalderaGangPlacement plugin: a Score plugin that
// keeps a gang's members in one topology domain and packs them onto few
// nodes. The scoring is pure Go in pkg/placement; this package feeds it the
// scheduler's snapshot once per cycle (PreScore) and reads it per node.
package placement

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/helper"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/cache"
	policy "github.com/caldera-sched/caldera/pkg/placement"
	"github.com/caldera-sched/caldera/pkg/plugins/args"
)

// Name is the plugin's name in KubeSchedulerConfiguration.
const Name = "CalderaGangPlacement"

const stateKey fwk.StateKey = Name + "/prescore"

// Placement scores nodes for gang members; other pods are skipped (a
// neutral score).
type Placement struct {
	handle fwk.Handle
	cache  *cache.Cache
	keys   []string
	w      policy.Weights
}

var (
	_ fwk.PreScorePlugin = &Placement{}
	_ fwk.ScorePlugin    = &Placement{}
)

// New builds the plugin for one profile; every profile shares the cache of p.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, p *cache.Provider) (fwk.Plugin, error) {
	var a Args
	if err := args.Decode(Name, obj, &a); err != nil {
		return nil, err
	}
	a.SetDefaults()
	if err := a.Validate(); err != nil {
		return nil, fmt.Errorf("%s args: %w", Name, err)
	}
	c, err := p.Get(ctx, h)
	if err != nil {
		return nil, err
	}
	return &Placement{handle: h, cache: c, keys: a.TopologyKeys, w: policy.Weights{Packing: *a.PackingStrength}}, nil
}

// Name returns the plugin name.
func (pl *Placement) Name() string { return Name }

// state is one cycle's summary of the nodes.
type state struct {
	scorer *policy.Scorer
	nodes  map[string]policy.Node
}

// Clone shares the state: it is read-only after PreScore.
func (s *state) Clone() fwk.StateData { return s }

// PreScore summarizes every node of the snapshot for pod's gang: domains,
// free room, siblings placed (bound or assumed). Pods outside a gang are
// skipped. O(nodes + pods) per gang member's cycle.
func (pl *Placement) PreScore(_ context.Context, cs fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	group, ok := pod.Labels[v1alpha1.PodGroupLabel]
	if !ok || group == "" {
		return fwk.NewStatus(fwk.Skip)
	}
	minMember, active, ok := pl.cache.GangShape(pod)
	if !ok || max(minMember, active) <= 1 {
		return fwk.NewStatus(fwk.Skip)
	}
	all, err := pl.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return fwk.AsStatus(err)
	}
	nodes := make(map[string]policy.Node, len(all))
	list := make([]policy.Node, 0, len(all))
	placed := 0
	for _, ni := range all {
		n := pl.node(ni, pod.Namespace, group)
		placed += n.Siblings
		nodes[ni.Node().Name] = n
		list = append(list, n)
	}
	g := policy.Gang{
		Request:   cache.PodRequest(pod),
		Remaining: max(minMember, active) - placed,
	}
	cs.Write(stateKey, &state{scorer: policy.NewScorer(g, list, len(pl.keys), pl.w), nodes: nodes})
	return nil
}

// node describes one node for the gang ns/group.
func (pl *Placement) node(ni fwk.NodeInfo, ns, group string) policy.Node {
	labels := ni.Node().Labels
	n := policy.Node{Domains: make([]string, len(pl.keys)), Allocatable: cache.AllocatableOf(ni), Free: cache.FreeOf(ni)}
	for i, k := range pl.keys {
		n.Domains[i] = labels[k]
	}
	for _, pi := range ni.GetPods() {
		p := pi.GetPod()
		if p.Namespace == ns && p.Labels[v1alpha1.PodGroupLabel] == group {
			n.Siblings++
		}
	}
	return n
}

// Score reads the node's score from the cycle's summary.
func (pl *Placement) Score(_ context.Context, cs fwk.CycleState, _ *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	d, err := cs.Read(stateKey)
	if err != nil {
		return 0, fwk.AsStatus(fmt.Errorf("reading %s: %w", stateKey, err))
	}
	s, ok := d.(*state)
	if !ok {
		return 0, fwk.AsStatus(fmt.Errorf("%s holds %T", stateKey, d))
	}
	return s.scorer.Score(s.nodes[ni.Node().Name]), nil
}

// ScoreExtensions returns the plugin itself: it normalizes its scores.
func (pl *Placement) ScoreExtensions() fwk.ScoreExtensions { return pl }

// NormalizeScore stretches the scores so that the best node gets
// MaxNodeScore: the weight in the profile then means the same whatever the
// spread of raw scores.
func (pl *Placement) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	return helper.DefaultNormalizeScore(fwk.MaxNodeScore, false, scores)
}
