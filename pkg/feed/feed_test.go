package feed_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/internal/snapshot"
	"github.com/caldera-sched/caldera/pkg/admission"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/cache/cachetest"
	"github.com/caldera-sched/caldera/pkg/dialect/schedplugins"
	"github.com/caldera-sched/caldera/pkg/feed"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/status"
)

// lists is what the fake API server serves: pods and PodGroups, and nodes
// when any are given.
func lists(pgs []*v1alpha1.PodGroup, pods []*v1.Pod, nodes ...*v1.Node) map[string]runtime.Object {
	podList := &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	for _, p := range pods {
		podList.Items = append(podList.Items, *p)
	}
	pgList := &v1alpha1.PodGroupList{TypeMeta: metav1.TypeMeta{Kind: "PodGroupList", APIVersion: v1alpha1.SchemeGroupVersion.String()}}
	for _, pg := range pgs {
		pgList.Items = append(pgList.Items, *pg)
	}
	out := map[string]runtime.Object{
		"/api/v1/pods": podList,
		"/apis/" + v1alpha1.SchemeGroupVersion.String() + "/podgroups": pgList,
	}
	if len(nodes) > 0 {
		nodeList := &v1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}}
		for _, n := range nodes {
			nodeList.Items = append(nodeList.Items, *n)
		}
		out["/api/v1/nodes"] = nodeList
	}
	return out
}

// fed starts a cache fed by real informers through Wire, against a fake
// API server serving pgs and pods, and waits until it has the members.
func fed(t *testing.T, pgs []*v1alpha1.PodGroup, pods []*v1.Pod, nodes ...*v1.Node) (*cache.Cache, *cache.Provider, *snapshot.Server) {
	t.Helper()
	srv, err := snapshot.Start(lists(pgs, pods, nodes...))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(func() { cancel(); srv.Close() })
	cfg := srv.Config()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	h := feed.ClientHandle("feed", cfg, cs, factory)
	p := cache.NewProvider(status.AlwaysLeading())
	c, err := p.Get(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	f, err := feed.Wire(ctx, h, p, schedplugins.NewReader())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	syncCtx, cancelSync := context.WithTimeout(ctx, time.Minute)
	defer cancelSync()
	if !f.WaitForMembers(syncCtx) {
		t.Fatal("gang members were not listed within a minute")
	}
	return c, p, srv
}

// groups renders the groups of a cache dump.
func groups(t *testing.T, c *cache.Cache) string {
	t.Helper()
	out, err := json.MarshalIndent(cachetest.DumpedGroups(t, c), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// The feed's informers deliver to the cache what a cache fed the same
// objects directly holds; and after the server's watches break and the
// informers relist (a lost connection, a compacted resource version:
// deletions arrive as tombstones), the cache holds what one fed the
// relisted objects holds.
func TestFeedConvergesThroughARelist(t *testing.T) {
	pgs, pods := cachetest.Gangs("ns", 2, 3) // g0 and g1, pods g0-p0 ... g1-p2
	c, _, srv := fed(t, pgs, pods)
	if got, want := groups(t, c), groups(t, cachetest.NewForTest(t, pgs, pods)); got != want {
		t.Fatalf("fed by informers the cache holds\n%s\nfed directly\n%s", got, want)
	}

	g0 := pgs[0].DeepCopy()
	g0.Spec.MinMember = 2
	g2 := pgs[1].DeepCopy()
	g2.Name, g2.UID = "g2", "ns-pg-g2"
	moved := pods[1].DeepCopy() // g0-p1 joins g2
	moved.Labels[gangbook.PodGroupLabel] = "g2"
	added := pods[5].DeepCopy()
	added.Name, added.UID = "g2-new", "ns-g2-new"
	added.Labels[gangbook.PodGroupLabel] = "g2"
	// g0-p2 is deleted; g1 loses its PodGroup but keeps its pods.
	finalPGs := []*v1alpha1.PodGroup{g0, g2}
	finalPods := []*v1.Pod{pods[0], moved, pods[3], pods[4], pods[5], added}
	if err := srv.Set(lists(finalPGs, finalPods)); err != nil {
		t.Fatal(err)
	}
	fresh, _ := cachetest.New(t, finalPGs, finalPods)
	want := groups(t, fresh)
	var got string
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got = groups(t, c)
		return got == want, nil
	})
	if err != nil {
		t.Fatalf("after a relist the cache holds\n%s\nwant (a cache fed the relisted objects)\n%s", got, want)
	}
}

// A plugin built after the feed is wired is refused: nothing would feed
// what it asks for.
func TestWireSealsTheCache(t *testing.T) {
	_, p, _ := fed(t, nil, nil)
	if err := p.EnableAdmission("late", admission.Options{}); err == nil {
		t.Errorf("admission enabled after the feed was wired")
	}
}

// A node deleted while the watch was broken reaches the cache as the
// informer's tombstone (its final state unknown) when the informer
// relists: the cache must unwrap it and forget the node, or admission
// would keep placing gangs on room that is gone.
func TestNodeDeletedThroughATombstoneIsForgotten(t *testing.T) {
	node := func(name string) *v1.Node {
		return &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
			Status: v1.NodeStatus{Allocatable: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"),
			}},
		}
	}
	c, _, srv := fed(t, nil, nil, node("n1"), node("n2"))
	waitNodes(t, c, "n1", "n2")
	if err := srv.Set(lists(nil, nil, node("n1"))); err != nil {
		t.Fatal(err)
	}
	waitNodes(t, c, "n1")
}

// waitNodes waits until the cache knows exactly the nodes want.
func waitNodes(t *testing.T, c *cache.Cache, want ...string) {
	t.Helper()
	var got []string
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got = c.NodeNames()
		slices.Sort(got)
		return slices.Equal(got, want), nil
	})
	if err != nil {
		t.Fatalf("the cache knows nodes %v, want %v", got, want)
	}
}

// Deliver hands a cache what the feed's informers hand it from the same
// objects, with no API server: the unfinished pods, bound or not; the
// finished members, by label and Job pods without it (slimmed); and
// nothing of other finished pods. The two caches' dumps agree.
func TestDeliverHandsWhatTheInformersHand(t *testing.T) {
	pgs, pods := cachetest.Gangs("ns", 2, 3)
	pods[0].Status.Phase = v1.PodSucceeded
	pods[3].Spec.NodeName = "n1"
	finished := func(name string, labels, annotations map[string]string) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("ns-" + name),
				Labels: labels, Annotations: annotations},
			Status: v1.PodStatus{Phase: v1.PodFailed},
		}
	}
	pods = append(pods,
		finished("job-0", map[string]string{batchv1.JobNameLabel: "job"}, map[string]string{qapi.GangMinMemberAnnotation: "2"}),
		finished("other", nil, nil))
	node := func(name string) *v1.Node {
		return &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
			Status: v1.NodeStatus{Allocatable: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"),
			}},
		}
	}
	nodes := []*v1.Node{node("n1"), node("n2")}
	informed, _, _ := fed(t, pgs, pods, nodes...)
	waitNodes(t, informed, "n1", "n2")

	p := cache.NewProvider(status.AlwaysLeading())
	if _, err := p.Get(t.Context(), feed.DetachedHandle("deliver")); err != nil {
		t.Fatal(err)
	}
	delivered, err := feed.Deliver(klog.Background(), p, &feed.Listed{PodGroups: pgs, Pods: pods, Nodes: nodes})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dumped(t, delivered), dumped(t, informed); got != want {
		t.Errorf("delivered directly the cache holds\n%s\nfed by informers\n%s", got, want)
	}
	if got := groups(t, delivered); !strings.Contains(got, `"succeeded": 1`) {
		t.Errorf("the finished members were not delivered:\n%s", got)
	}
}

// dumped is the cache's dump without its time.
func dumped(t *testing.T, c *cache.Cache) string {
	t.Helper()
	d := cachetest.Dumped(t, c)
	d.Time = time.Time{}
	out, err := json.MarshalIndent(d, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
