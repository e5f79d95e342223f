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

	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/convert"
	"github.com/caldera-sched/caldera/pkg/gangbook"
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
	handle fwk.Handle
	cache  *cache.Cache
	// reservations says which profiles' CalderaGang reports reservations
	// (the Provider, which every profile's factory has told by the time a
	// pod is scored).
	reservations reservations
	profile      string
	keys         []string
	w            policy.Weights
}

// reservations is what the plugin asks the Provider.
type reservations interface {
	// TracksReservations says whether profile's CalderaGang reports the
	// nodes the scheduler reserves for members.
	TracksReservations(profile string) bool
}

var _ reservations = (*cache.Provider)(nil)

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
	return &Placement{handle: h, cache: c, reservations: p, profile: h.ProfileName(), keys: a.TopologyKeys, w: policy.Weights{Packing: *a.PackingStrength}}, nil
}

// Name returns the plugin name.
func (pl *Placement) Name() string { return Name }

// state is one cycle's summary of the nodes.
type state struct {
	gang   policy.Gang // what the scorer was built for
	scorer *policy.Scorer
	// keys are the profile's topology keys, "" for those whose domain the
	// scorer does not read (policy.Scorer.ReadsDomain).
	keys []string
	// names are the resources the member requests, in the order of
	// gang.Request: Score reads a node's amounts of these.
	names []string
	// siblings counts the gang's members placed per node, for the nodes
	// that have any.
	siblings map[string]int
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
	if _, member := gangbook.GroupKeyOf(pod); member {
		return nil, fwk.NewStatus(fwk.Unschedulable, "a gang member's placement score depends on its siblings' nodes")
	}
	return nil, nil
}

// PreScore summarizes the nodes for pod's gang: where its siblings are
// placed (bound or assumed) and, while none is, how many members each
// topology domain can hold. Pods outside a gang are skipped. Once a sibling
// is placed, the score reads only the siblings' domains (policy.Scorer), so
// only their nodes are summarized: O(gang) per member's cycle, and O(nodes)
// for a gang's first member. Only when the profile's CalderaGang does not
// report reservations (so the cache misses assumed siblings) are the
// snapshot's pods scanned, O(nodes + pods).
func (pl *Placement) PreScore(_ context.Context, cs fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	group, ok := gangbook.GroupKeyOf(pod)
	if !ok {
		return fwk.NewStatus(fwk.Skip)
	}
	scan := !pl.reservations.TracksReservations(pl.profile)
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
	nodeInfos := pl.handle.SnapshotSharedLister().NodeInfos()
	names, req := denseRequest(convert.PodRequest(pod))
	siblings := map[string]int{}
	var all []fwk.NodeInfo
	if scan {
		var err error
		if all, err = nodeInfos.List(); err != nil {
			return fwk.AsStatus(err)
		}
		for _, ni := range all {
			for _, pi := range ni.GetPods() {
				if k, ok := gangbook.GroupKeyOf(pi.GetPod()); ok && k == group {
					siblings[ni.Node().Name]++
				}
			}
		}
	} else {
		for _, name := range placedOn {
			// Siblings on nodes the snapshot does not list hold no room here.
			if _, err := nodeInfos.Get(name); err == nil {
				siblings[name]++
			}
		}
	}
	placed := 0
	for _, n := range siblings {
		placed += n
	}
	g := policy.Gang{Request: req, Remaining: max(minMember, active) - placed}
	scorer := policy.NewScorer(g, nil, len(pl.keys), pl.w)
	var buf nodeBuf
	if placed > 0 {
		for name, n := range siblings {
			ni, err := nodeInfos.Get(name)
			if err != nil {
				return fwk.AsStatus(err)
			}
			node := buf.node(ni, pl.keys, names)
			node.Siblings = n
			scorer.Add(node)
		}
	} else {
		if all == nil {
			var err error
			if all, err = nodeInfos.List(); err != nil {
				return fwk.AsStatus(err)
			}
		}
		for _, ni := range all {
			scorer.Add(buf.node(ni, pl.keys, names))
		}
	}
	// Score reads only the labels the scorer reads ("" stands for the rest).
	keys := slices.Clone(pl.keys)
	for i := range keys {
		if !scorer.ReadsDomain(i) {
			keys[i] = ""
		}
	}
	cs.Write(stateKey, &state{gang: g, scorer: scorer, keys: keys, names: names, siblings: siblings})
	return nil
}

// nodeBuf holds one policy.Node's slices, so that summarizing a node
// allocates nothing for the usual few keys and resources.
type nodeBuf struct {
	domains [8]string
	amounts [16]int64
}

// node fills the buffer with ni's domains for keys and its free and
// allocatable amounts of names (assumed pods included), and returns it as a
// policy.Node with no siblings. The Node is valid until the next call.
func (b *nodeBuf) node(ni fwk.NodeInfo, keys, names []string) policy.Node {
	domains, amounts := b.domains[:0], b.amounts[:0]
	if len(keys) > len(b.domains) {
		domains = make([]string, 0, len(keys))
	}
	if 2*len(names) > len(b.amounts) {
		amounts = make([]int64, 0, 2*len(names))
	}
	node := ni.Node()
	for _, key := range keys {
		d := ""
		if key != "" {
			d = node.Labels[key]
		}
		domains = append(domains, d)
	}
	alloc, used := ni.GetAllocatable(), ni.GetRequested()
	for _, name := range names {
		amounts = append(amounts, convert.Amount(alloc, name))
	}
	for i, name := range names {
		amounts = append(amounts, amounts[i]-convert.Amount(used, name))
	}
	r := len(names)
	return policy.Node{Domains: domains, Allocatable: amounts[:r:r], Free: amounts[r:]}
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

// Score scores the node from the cycle's summary and the node's own room.
// O(keys + resources).
func (pl *Placement) Score(_ context.Context, cs fwk.CycleState, _ *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	d, err := cs.Read(stateKey)
	if err != nil {
		return 0, fwk.AsStatus(fmt.Errorf("reading %s: %w", stateKey, err))
	}
	s, ok := d.(*state)
	if !ok {
		return 0, fwk.AsStatus(fmt.Errorf("%s holds %T", stateKey, d))
	}
	var buf nodeBuf
	return s.scorer.Score(buf.node(ni, s.keys, s.names)), nil
}

// ScoreExtensions returns the plugin itself: it normalizes its scores.
func (pl *Placement) ScoreExtensions() fwk.ScoreExtensions { return pl }

// NormalizeScore stretches the scores so that the best node gets
// MaxNodeScore: the weight in the profile then means the same whatever the
// spread of raw scores.
func (pl *Placement) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	return helper.DefaultNormalizeScore(fwk.MaxNodeScore, false, scores)
}
