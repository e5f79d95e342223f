// Package cachetest builds a filled cache.Cache for the tests and benchmarks
// of packages other than pkg/cache, without a cluster.
//
// It is test-only: import it from _test.go files, never from production code.
// It lives outside pkg/cache because Go test helpers cannot cross packages, and
// it reaches the cache only through its public constructor (cache.Provider),
// feeding the cache's informers from an in-process fake API server.
package cachetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/internal/snapshot"
	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/dialect/schedplugins"
	"github.com/caldera-sched/caldera/pkg/feed"
	"github.com/caldera-sched/caldera/pkg/status"
)

// NewForTest returns a cache whose informers have delivered pgs and pods.
//
// Every pod must carry the PodGroup label, be pending and unbound, and every
// PodGroup's minMember must equal its number of pods, so that every group is
// enqueueable. The cache lives until the test ends.
func NewForTest(tb testing.TB, pgs []*v1alpha1.PodGroup, pods []*v1.Pod) *cache.Cache {
	tb.Helper()
	if err := validate(pgs, pods); err != nil {
		tb.Fatalf("cachetest.NewForTest: %v", err)
	}
	c, _ := NewWithServer(tb, pgs, pods)
	return c
}

// NewWithServer returns a cache whose informers have delivered pgs and pods,
// in any state, and the fake API server that feeds them, so that a test can
// make the informers relist other objects (Server.Relist).
func NewWithServer(tb testing.TB, pgs []*v1alpha1.PodGroup, pods []*v1.Pod) (*cache.Cache, *Server) {
	tb.Helper()
	c, fs, start := NewUnstarted(tb, pgs, pods)
	start()
	return c, fs
}

// NewUnstarted returns the cache as plugin factories get it from
// cache.Provider.Get, before anything started; its fake API server; and
// start, which does what the command and then the scheduler do: Start the
// cache, start the scheduler's informers, and wait for the gang members.
func NewUnstarted(tb testing.TB, pgs []*v1alpha1.PodGroup, pods []*v1.Pod) (*cache.Cache, *Server, func()) {
	tb.Helper()
	srv, err := snapshot.Start(lists(pgs, pods))
	if err != nil {
		tb.Fatalf("cachetest: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(func() {
		cancel()
		srv.Close()
	})

	cfg := srv.Config()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		tb.Fatalf("cachetest.NewForTest: %v", err)
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	h := snapshot.Handle("cachetest", cfg, cs, factory)
	c, err := cache.NewProvider(status.AlwaysLeading()).Get(ctx, h)
	if err != nil {
		tb.Fatalf("cachetest: %v", err)
	}
	start := func() {
		tb.Helper()
		// The feed is wired once the caller has made its settings, as the
		// command wires it once every plugin is built. Start returns once
		// the feed's own informers have delivered every listed object;
		// unfinished members come from the handle's factory, which a
		// scheduler starts after that, as here.
		f, err := feed.Wire(ctx, h, c, schedplugins.NewReader())
		if err != nil {
			tb.Fatalf("cachetest: %v", err)
		}
		if err := f.Start(ctx); err != nil {
			tb.Fatalf("cachetest: %v", err)
		}
		factory.Start(ctx.Done())
		syncCtx, cancelSync := context.WithTimeout(ctx, time.Minute)
		defer cancelSync()
		if !f.WaitForMembers(syncCtx) {
			tb.Fatalf("cachetest: gang members were not listed within a minute")
		}
		if loop, ok := c.AdmissionLoop(f.HandlersSynced()); ok {
			go loop.Run(ctx)
		}
	}
	return c, &Server{srv: srv}, start
}

// Server is the fake API server behind a cache of NewWithServer: a
// snapshot.Server of pods and PodGroups.
type Server struct{ srv *snapshot.Server }

// Requests returns how many requests the server has received.
func (s *Server) Requests() int64 { return s.srv.Requests() }

// Relist replaces the served objects and ends every open watch: the
// informers see a watch gap and relist, as after a lost connection or a
// compacted resource version, and deliver the difference (deletes as
// tombstones).
func (s *Server) Relist(pgs []*v1alpha1.PodGroup, pods []*v1.Pod) {
	if err := s.srv.Set(lists(pgs, pods)); err != nil {
		panic(err) // lists builds only list types
	}
}

// lists is what the server serves for pgs and pods.
func lists(pgs []*v1alpha1.PodGroup, pods []*v1.Pod) map[string]runtime.Object {
	podList := &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	for _, p := range pods {
		podList.Items = append(podList.Items, *p)
	}
	pgList := &v1alpha1.PodGroupList{TypeMeta: metav1.TypeMeta{Kind: "PodGroupList", APIVersion: v1alpha1.SchemeGroupVersion.String()}}
	for _, pg := range pgs {
		pgList.Items = append(pgList.Items, *pg)
	}
	return map[string]runtime.Object{
		"/api/v1/pods": podList,
		"/apis/" + v1alpha1.SchemeGroupVersion.String() + "/podgroups": pgList,
	}
}

// DumpedGroups returns the groups of c's dump (Cache.Dump), sorted by key:
// what a test outside pkg/cache can see of the cache's aggregates.
func DumpedGroups(tb testing.TB, c *cache.Cache) []cache.GroupDump {
	tb.Helper()
	data, err := c.Dump()
	if err != nil {
		tb.Fatal(err)
	}
	var d cache.CacheDump
	if err := json.Unmarshal(data, &d); err != nil {
		tb.Fatal(err)
	}
	sort.Slice(d.Groups, func(i, j int) bool { return d.Groups[i].Key < d.Groups[j].Key })
	return d.Groups
}

// Gangs returns groups PodGroups of size members each in namespace ns, named
// g0, g1, …, with their pods named <group>-p0, <group>-p1, …, each requesting
// 100m cpu: input that NewForTest accepts.
func Gangs(ns string, groups, size int) ([]*v1alpha1.PodGroup, []*v1.Pod) {
	created := metav1.NewTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	pgs := make([]*v1alpha1.PodGroup, 0, groups)
	pods := make([]*v1.Pod, 0, groups*size)
	for g := range groups {
		name := fmt.Sprint("g", g)
		pgs = append(pgs, &v1alpha1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-pg-" + name), CreationTimestamp: created},
			Spec:       v1alpha1.PodGroupSpec{MinMember: int32(size)},
		})
		for i := range size {
			pname := fmt.Sprintf("%s-p%d", name, i)
			pods = append(pods, &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: ns, Name: pname, UID: types.UID(ns + "-" + pname), CreationTimestamp: created,
					Labels: map[string]string{cache.PodGroupLabel: name},
				},
				Spec: v1.PodSpec{Containers: []v1.Container{{
					Name:      "c",
					Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}},
				}}},
				Status: v1.PodStatus{Phase: v1.PodPending},
			})
		}
	}
	return pgs, pods
}

func validate(pgs []*v1alpha1.PodGroup, pods []*v1.Pod) error {
	size := map[cache.GroupKey]int32{}
	for _, p := range pods {
		k, ok := cache.GroupKeyOf(p)
		if !ok {
			return fmt.Errorf("pod %s/%s has no %s label", p.Namespace, p.Name, cache.PodGroupLabel)
		}
		if p.Spec.NodeName != "" || (p.Status.Phase != "" && p.Status.Phase != v1.PodPending) {
			return fmt.Errorf("pod %s/%s is not pending and unbound", p.Namespace, p.Name)
		}
		size[k]++
	}
	for _, pg := range pgs {
		k := cache.GroupKey{Namespace: pg.Namespace, Name: pg.Name}
		if pg.Spec.MinMember != size[k] {
			return fmt.Errorf("PodGroup %s: minMember %d, but %d pods", k, pg.Spec.MinMember, size[k])
		}
		delete(size, k)
	}
	for k := range size {
		return fmt.Errorf("pods of group %s have no PodGroup", k)
	}
	return nil
}
