package cachetest_test

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/cache/cachetest"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

func TestNewForTest(t *testing.T) {
	pgs, pods := cachetest.Gangs("ns", 3, 4)
	c := cachetest.NewForTest(t, pgs, pods)
	want := cache.SortInfo{Created: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), Namespace: "ns"}
	for _, p := range pods {
		if member, ok, msg := c.Enqueueable(p); !member || !ok {
			t.Errorf("Enqueueable(%s) = (%v, %v, %q), want an enqueueable member", p.Name, member, ok, msg)
		}
		want.Name = p.Labels[gangbook.PodGroupLabel]
		if got := c.SortInfo(p); !got.Created.Equal(want.Created) || got.Namespace != want.Namespace || got.Name != want.Name || got.Priority != 0 {
			t.Errorf("SortInfo(%s) = %+v, want %+v", p.Name, got, want)
		}
	}
	if req, ok := c.MinRequest(gangbook.GroupKey{Namespace: "ns", Name: "g1"}); !ok || req["cpu"] != 400 {
		t.Errorf("MinRequest(ns/g1) = %v, %v; want 400m cpu from the four members", req, ok)
	}
}

// Plugin factories get the cache from Provider.Get and set up admission and
// status; none of it may reach the API server or run before the command's
// Start, and nothing may be set up after it. The cache is fed without the
// API, so its handle's clientset must see no request at all.
func TestGetStartsNothingUntilStart(t *testing.T) {
	pgs, pods := cachetest.Gangs("ns", 2, 3)
	c, f := cachetest.NewUnstarted(t)
	p := f.Provider()
	if err := p.EnableStatus(cachetest.Profile, cache.ReconcilerOptions{SyncPeriod: time.Second}); err != nil {
		t.Fatalf("EnableStatus before Start: %v", err)
	}
	if err := p.EnableStatus("other", cache.ReconcilerOptions{SyncPeriod: 2 * time.Second}); err == nil {
		t.Errorf("EnableStatus with another profile's period: no error")
	}
	if n := f.Requests(); n != 0 {
		t.Fatalf("the API server got %d requests before Start", n)
	}
	if got := cachetest.DumpedGroups(t, c); len(got) != 0 {
		t.Fatalf("groups before Start: %+v", got)
	}
	f.Start(pgs, pods)
	if got := cachetest.DumpedGroups(t, c); len(got) != 2 {
		t.Errorf("groups after Start: %d, want 2", len(got))
	}
	for _, p := range pods {
		if _, ok, msg := c.Enqueueable(p); !ok {
			t.Errorf("after Start %s is held: %s (the members were not listed)", p.Name, msg)
		}
	}
	if n := f.Requests(); n != 0 {
		t.Errorf("the cache sent the API server %d requests while fed", n)
	}
	if err := p.EnableStatus("late", cache.ReconcilerOptions{SyncPeriod: time.Second}); err == nil {
		t.Errorf("EnableStatus after Start: no error")
	}
	if err := p.EnableAdmission("late", admission.Options{}); err == nil {
		t.Errorf("EnableAdmission after Start: no error, but nothing would start it")
	}
}

func TestNewForTestEmpty(t *testing.T) {
	c := cachetest.NewForTest(t, nil, nil)
	if _, ok := c.MinRequest(gangbook.GroupKey{Namespace: "ns", Name: "g0"}); ok {
		t.Errorf("empty cache knows group ns/g0")
	}
}

// After a watch gap the informers relist, each on its own; the cache must
// converge to exactly what a cache started from the relisted objects holds,
// whatever changed in the gap and whichever informer relists first: a pod
// deleted, a pod relabelled into another gang, a PodGroup deleted under its
// members, a PodGroup changed, new PodGroups and pods, a member finished.
func TestRelistConverges(t *testing.T) {
	pgs, pods := cachetest.Gangs("ns", 2, 3) // g0 and g1, pods g0-p0 ... g1-p2

	g0 := pgs[0].DeepCopy()
	g0.Spec.MinMember = 2
	g2 := pgs[1].DeepCopy()
	g2.Name, g2.UID = "g2", "ns-pg-g2"
	moved := pods[1].DeepCopy() // g0-p1 joins g2
	moved.Labels[gangbook.PodGroupLabel] = "g2"
	added := pods[5].DeepCopy()
	added.Name, added.UID = "g2-new", "ns-g2-new"
	added.Labels[gangbook.PodGroupLabel] = "g2"
	done := pods[4].DeepCopy() // g1-p1 succeeded
	done.Status.Phase = v1.PodSucceeded
	// g0-p2 is deleted; g1 loses its PodGroup but keeps its pods.
	finalPGs := []*v1alpha1.PodGroup{g0, g2}
	finalPods := []*v1.Pod{pods[0], moved, pods[3], done, pods[5], added}

	fresh, _ := cachetest.New(t, finalPGs, finalPods)
	want := groups(t, fresh)
	for _, order := range []string{"groups first", "pods first"} {
		c, f := cachetest.New(t, pgs, pods)
		if got := groups(t, c); got == want {
			t.Fatalf("%s: the cache holds the relisted state before the relist: the test checks nothing", order)
		}
		if order == "groups first" {
			f.Relist(finalPGs, finalPods)
		} else {
			f.RelistPods(finalPods)
			f.RelistGroups(finalPGs)
		}
		if got := groups(t, c); got != want {
			t.Errorf("%s: after a relist the cache holds\n%s\nwant (a cache started from the relisted objects)\n%s", order, got, want)
		}
	}
}

// cachetest is for tests only, and imports nothing above pkg/cache: no
// internal package (internal/snapshot imports pkg/cache) and no plugin.
func TestImportsNothingAbove(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			if strings.HasPrefix(imp, "github.com/caldera-sched/caldera/internal/") ||
				strings.HasPrefix(imp, "github.com/caldera-sched/caldera/pkg/plugins/") ||
				imp == "github.com/caldera-sched/caldera/pkg/feed" {
				t.Errorf("%s imports %s, above pkg/cache", name, imp)
			}
		}
	}
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
