// Package placement is the CalderaGangPlacement plugin: a Score plugin that
// keeps a gang's members in one topology domain and packs them onto few
// nodes. The scoring is pure Go in pkg/placement; this package feeds it the
// scheduler's snapshot once per cycle (PreScore) and reads it per node.
package placement

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/helper"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/cache"
	policy "github.com/caldera-sched/caldera/pkg/placement"
	"github.com/caldera-sched/caldera/pkg/plugins/args"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// Name is the plugin's name in KubeSchedulerConfiguration.
const Name = "CalderaGangPlacement"

const stateKey fwk.StateKey = Name + "/prescore"

// Placement scores nodes for gang members; other pods are skipped (a
// neutral score).
type Placement struct {
	handle  fwk.Handle
	cache   *cache.Cache
	profile string
	keys    []string
	w       policy.Weights
}

var (
	_ fwk.PreScorePlugin = &Placement{}
	_ fwk.ScorePlugin    = &Placement{}
	_ fwk.SignPlugin     = &Placement{}
)

// New builds the plugin for one profile; every profile shares the cache of p.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, p *cache.Provider) (fwk.Plugin, error) {
	var a Args
	if err := args.Load(Name, obj, &a); err != nil {
		return nil, err
	}
	c, err := p.Get(ctx, h)
	if err != nil {
		return nil, err
	}
	return &Placement{handle: h, cache: c, profile: h.ProfileName(), keys: a.TopologyKeys, w: policy.Weights{Packing: *a.PackingStrength}}, nil
}

// Name returns the plugin name.
func (pl *Placement) Name() string { return Name }

// state is one cycle's summary of the nodes.
type state struct {
	gang   policy.Gang // what the scorer was built for
	scorer *policy.Scorer
	nodes  []policy.Node
	index  map[string]int // node name -> nodes index
}

// Clone shares the state: it is read-only after PreScore.
func (s *state) Clone() fwk.StateData { return s }

// SignPod keeps kube-scheduler's opportunistic batching (KEP-5598) for the
// pods this plugin does not score: a Score plugin that does not sign turns
// batching off for every pod of the profile. Pods that name no PodGroup get
// the neutral score (PreScore skips them), so they sign with no fragment. A
// gang member's score depends on where its siblings have just been placed,
// which a signature of the pod cannot capture, so members refuse to be signed
// and are scored every cycle.
func (pl *Placement) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	if group := pod.Labels[v1alpha1.PodGroupLabel]; group != "" {
		return nil, fwk.NewStatus(fwk.Unschedulable, "a gang member's placement score depends on its siblings' nodes")
	}
	return nil, nil
}

// PreScore summarizes every node of the snapshot for pod's gang: domains,
// free room, siblings placed (bound or assumed). Pods outside a gang are
// skipped. The siblings come from the cache's members of the gang, O(nodes
// + gang) per gang member's cycle; only when the profile's CalderaGang does
// not report reservations (so the cache misses assumed siblings) are the
// snapshot's pods scanned, O(nodes + pods).
func (pl *Placement) PreScore(_ context.Context, cs fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	group, ok := pod.Labels[v1alpha1.PodGroupLabel]
	if !ok || group == "" {
		return fwk.NewStatus(fwk.Skip)
	}
	scan := !pl.cache.TracksReservations(pl.profile)
	var minMember, active int
	var placedOn []string
	if scan {
		minMember, active, ok = pl.cache.GangShape(pod)
	} else {
		minMember, active, placedOn, ok = pl.cache.GangPlacement(pod, nil)
	}
	if !ok || max(minMember, active) <= 1 {
		return fwk.NewStatus(fwk.Skip)
	}
	all, err := pl.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return fwk.AsStatus(err)
	}
	// One member's request as dense amounts, and every node's free and
	// allocatable amounts of those resources and domains, in three shared
	// arrays: PreScore runs for every gang member, over every node.
	names, req := denseRequest(cache.PodRequest(pod))
	r, k := len(names), len(pl.keys)
	amounts := make([]int64, 2*r*len(all))
	domains := make([]string, k*len(all))
	list := make([]policy.Node, len(all))
	index := make(map[string]int, len(all))
	placed := 0
	for i, ni := range all {
		n := &list[i]
		n.Free, n.Allocatable = amounts[2*r*i:2*r*i+r:2*r*i+r], amounts[2*r*i+r:2*r*(i+1)]
		n.Domains = domains[k*i : k*(i+1)]
		node := ni.Node()
		for j, key := range pl.keys {
			n.Domains[j] = node.Labels[key]
		}
		alloc, used := ni.GetAllocatable(), ni.GetRequested()
		for j, name := range names {
			n.Allocatable[j] = cache.AmountOf(alloc, name)
			n.Free[j] = n.Allocatable[j] - cache.AmountOf(used, name)
		}
		if scan {
			for _, pi := range ni.GetPods() {
				if p := pi.GetPod(); p.Namespace == pod.Namespace && p.Labels[v1alpha1.PodGroupLabel] == group {
					n.Siblings++
				}
			}
			placed += n.Siblings
		}
		index[node.Name] = i
	}
	// Siblings on nodes the snapshot does not list hold no room here.
	for _, name := range placedOn {
		if i, ok := index[name]; ok {
			list[i].Siblings++
			placed++
		}
	}
	g := policy.Gang{Request: req, Remaining: max(minMember, active) - placed}
	cs.Write(stateKey, &state{gang: g, scorer: policy.NewScorer(g, list, k, pl.w), nodes: list, index: index})
	return nil
}

// denseRequest splits a request into sorted names and their amounts.
func denseRequest(l resources.List) ([]string, []int64) {
	names := make([]string, 0, len(l))
	for name, v := range l {
		if v > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	amounts := make([]int64, len(names))
	for i, name := range names {
		amounts[i] = l[name]
	}
	return names, amounts
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
	i, ok := s.index[ni.Node().Name]
	if !ok {
		return 0, nil // a node the snapshot did not list: neutral
	}
	return s.scorer.Score(s.nodes[i]), nil
}

// ScoreExtensions returns the plugin itself: it normalizes its scores.
func (pl *Placement) ScoreExtensions() fwk.ScoreExtensions { return pl }

// NormalizeScore stretches the scores so that the best node gets
// MaxNodeScore: the weight in the profile then means the same whatever the
// spread of raw scores.
func (pl *Placement) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	return helper.DefaultNormalizeScore(fwk.MaxNodeScore, false, scores)
}
