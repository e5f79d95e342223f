package registry

import (
	"context"
	batchv1 "k8s.io/api/batch/v1"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/internal/snapshot"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/feed"
	"github.com/caldera-sched/caldera/pkg/plugins/binder"
	"github.com/caldera-sched/caldera/pkg/plugins/enqueue"
	"github.com/caldera-sched/caldera/pkg/plugins/gang"
	"github.com/caldera-sched/caldera/pkg/plugins/placement"
	"github.com/caldera-sched/caldera/pkg/plugins/queuesort"
	"github.com/caldera-sched/caldera/pkg/plugins/reclaim"
	"github.com/caldera-sched/caldera/pkg/plugins/reservation"
)

// serve starts a fake API server serving objects() for the test, and
// returns a context ended with it, a client of it and an informer factory
// over that client, not started.
func serve(t *testing.T) (context.Context, *rest.Config, kubernetes.Interface, informers.SharedInformerFactory) {
	t.Helper()
	srv, err := snapshot.Start(objects())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cfg := srv.Config()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	return ctx, cfg, cs, informers.NewSharedInformerFactory(cs, 0)
}

// registryOf is the plugin registry kube-scheduler builds from p's options.
func registryOf(t *testing.T, p *Plugins) frameworkruntime.Registry {
	t.Helper()
	reg := frameworkruntime.Registry{}
	for _, o := range p.Options() {
		if err := o(reg); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// Every Caldera plugin is registered under its Name, once.
func TestOptionsRegisterEveryPlugin(t *testing.T) {
	reg := registryOf(t, New())
	want := []string{binder.Name, enqueue.Name, gang.Name, placement.Name, queuesort.Name, reclaim.Name, reservation.Name}
	var got []string
	for name := range reg {
		got = append(got, name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("registered %v, want %v", got, want)
	}
}

// With no Caldera plugin built there is no cache, and Start starts
// nothing and succeeds.
func TestStartWithoutPlugins(t *testing.T) {
	p := New()
	if err := p.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if p.Cache() != nil {
		t.Errorf("a cache exists although no plugin was built")
	}
}

// Two profiles' plugins share one cache; Start wires the feed to the
// first handle's informers, so a gang listed by the API server reaches
// the cache, and admission runs on the Queue it lists; a plugin built
// after Start is refused.
func TestPluginsShareOneCacheFedAtStart(t *testing.T) {
	ctx, cfg, cs, factory := serve(t)

	p := New()
	reg := registryOf(t, p)
	for _, profile := range []string{"caldera-a", "caldera-b"} {
		h := feed.ClientHandle(profile, cfg, cs, factory)
		for _, name := range []string{queuesort.Name, gang.Name, enqueue.Name} {
			if _, err := reg[name](ctx, nil, h); err != nil {
				t.Fatalf("%s of %s: %v", name, profile, err)
			}
		}
	}
	c := p.Cache()
	if c == nil {
		t.Fatal("no cache after the plugins were built")
	}
	if err := p.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	factory.Start(ctx.Done())

	pod := member()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if isMember, ok, msg := c.Enqueueable(pod); isMember && ok {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the listed gang never reached the cache: Enqueueable = %v, %v, %q", isMember, ok, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if q, ok := c.DefaultQueue(); !ok || q != qapi.DefaultQueueName {
		t.Errorf("DefaultQueue = %q, %v; want admission on with %q", q, ok, qapi.DefaultQueueName)
	}
	late := feed.ClientHandle("late", cfg, cs, factory)
	if _, err := reg[enqueue.Name](ctx, nil, late); err == nil {
		t.Errorf("CalderaEnqueue built after Start was accepted; nothing would feed it")
	}
}

// Profiles that give a plugin whose settings the cache shares the same
// args are built; a profile that gives others is refused at start-up, the
// error naming the plugin, both profiles and both values. CalderaReclaim's
// eviction kinds are refused too rather than merged: one admission pass
// counts on the evictions for every profile's gangs.
func TestProfilesThatDisagreeAreRefused(t *testing.T) {
	cfg := &rest.Config{Host: "http://127.0.0.1:1"} // never dialled: factories build no client
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	raw := func(js string) runtime.Object {
		return &runtime.Unknown{Raw: []byte(js), ContentType: runtime.ContentTypeJSON}
	}
	for _, tc := range []struct {
		name, plugin string
		a, b         string
		// want are the refusal's parts; none: b's profile is built.
		want []string
	}{
		{"reclaim alike", reclaim.Name, `{"minVictimRuntimeSeconds": 5}`, `{}`, nil},
		{"reclaim differs", reclaim.Name, `{}`, `{"enableReclaim": false}`,
			[]string{"CalderaReclaim: enableReclaim and enablePreemption: profiles disagree", "profile b asks for enableReclaim=false enablePreemption=true", "profile a for enableReclaim=true enablePreemption=true"}},
		{"preemption differs", reclaim.Name, `{"enablePreemption": false}`, `{}`,
			[]string{"profile b asks for enableReclaim=true enablePreemption=true", "profile a for enableReclaim=true enablePreemption=false"}},
		{"status period alike", gang.Name, `{"statusSyncPeriodSeconds": 3}`, `{"statusSyncPeriodSeconds": 3}`, nil},
		{"status period differs", gang.Name, `{}`, `{"statusSyncPeriodSeconds": 3}`,
			[]string{"CalderaGang: statusSyncPeriodSeconds: profiles disagree", "profile b asks for {SyncPeriod:3s}", "profile a for {SyncPeriod:1s}"}},
		{"admission differs", enqueue.Name, `{}`, `{"defaultQueue": "other"}`,
			[]string{"CalderaEnqueue: args: profiles disagree", "profile b asks for {DefaultQueue:other", "profile a for {DefaultQueue:default"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := registryOf(t, New())
			if _, err := reg[tc.plugin](t.Context(), raw(tc.a), feed.ClientHandle("a", cfg, cs, factory)); err != nil {
				t.Fatalf("profile a: %v", err)
			}
			_, err := reg[tc.plugin](t.Context(), raw(tc.b), feed.ClientHandle("b", cfg, cs, factory))
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("profile b, asking alike: %v", err)
			case tc.want != nil && err == nil:
				t.Fatalf("profile b, asking otherwise: built, want refused")
			}
			for _, part := range tc.want {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q lacks %q", err, part)
				}
			}
		})
	}
}

// member is the one member of gang ns/g in objects.
func member() *v1.Pod {
	return &v1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m0", UID: "m0",
			Labels: map[string]string{v1alpha1.PodGroupLabel: "g"}},
		Spec: v1.PodSpec{SchedulerName: "caldera-a", Containers: []v1.Container{{Name: "c",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}}},
		Status: v1.PodStatus{Phase: v1.PodPending},
	}
}

// objects is what the fake API server lists: a node, gang ns/g of one
// member and its PodGroup, and the default Queue.
func objects() map[string]runtime.Object {
	node := v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourcePods: resource.MustParse("110")}}}
	pg := v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g", UID: "g"}, Spec: v1alpha1.PodGroupSpec{MinMember: 1}}
	queue := qapi.Queue{ObjectMeta: metav1.ObjectMeta{Name: qapi.DefaultQueueName}}
	return map[string]runtime.Object{
		"/api/v1/nodes":       &v1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, Items: []v1.Node{node}},
		"/api/v1/pods":        &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []v1.Pod{*member()}},
		"/api/v1/namespaces":  &v1.NamespaceList{TypeMeta: metav1.TypeMeta{Kind: "NamespaceList", APIVersion: "v1"}},
		"/apis/batch/v1/jobs": &batchv1.JobList{TypeMeta: metav1.TypeMeta{Kind: "JobList", APIVersion: "batch/v1"}},
		"/apis/" + v1alpha1.SchemeGroupVersion.String() + "/podgroups": &v1alpha1.PodGroupList{
			TypeMeta: metav1.TypeMeta{Kind: "PodGroupList", APIVersion: v1alpha1.SchemeGroupVersion.String()}, Items: []v1alpha1.PodGroup{pg}},
		"/apis/" + qapi.SchemeGroupVersion.String() + "/queues": &qapi.QueueList{
			TypeMeta: metav1.TypeMeta{Kind: "QueueList", APIVersion: qapi.SchemeGroupVersion.String()}, Items: []qapi.Queue{queue}},
	}
}
