package cache

import (
	"context"
	"slices"
	"sync"

	sched "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
	pglisters "sigs.k8s.io/scheduler-plugins/pkg/generated/listers/scheduling/v1alpha1"

	qclient "github.com/caldera-sched/caldera/pkg/apis/generated/clientset/versioned"
	"github.com/caldera-sched/caldera/pkg/dialect"
	"github.com/caldera-sched/caldera/pkg/dialect/schedplugins"
	"github.com/caldera-sched/caldera/pkg/dialect/volcano"
	"github.com/caldera-sched/caldera/pkg/status"
)

// testWiring is, per test cache, what the command would hand the status
// writer beside the cache: the adapters (as readers of their objects and
// holders of their clients) and the Queue client.
var testWiring sync.Map // *Cache -> *wiring

type wiring struct {
	mu       sync.Mutex
	adapters []dialect.Adapter
	queues   qclient.Interface
}

func wiringOf(c *Cache) *wiring {
	w, _ := testWiring.LoadOrStore(c, &wiring{})
	return w.(*wiring)
}

// addAdapter records a for c's status writer.
func addAdapter(c *Cache, a dialect.Adapter) {
	w := wiringOf(c)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.adapters = append(w.adapters, a)
}

// adaptersOf lists what addAdapter recorded for c.
func adaptersOf(c *Cache) []dialect.Adapter {
	w := wiringOf(c)
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.adapters)
}

// withPodGroups gives the cache a scheduler-plugins adapter writing with
// client (a fake clientset) and reading lister; with a nil lister, every
// status pass reads the clientset's objects, as the informer would have
// them.
func withPodGroups(c *Cache, client pgclient.Interface, lister pglisters.PodGroupLister) {
	if lister == nil {
		addAdapter(c, relisting{client})
		return
	}
	addAdapter(c, schedplugins.ReaderOver(client, lister))
}

// relisting is a scheduler-plugins adapter whose objects are the
// clientset's as they are at each status pass.
type relisting struct{ client pgclient.Interface }

func (relisting) Watch(context.Context, fwk.Handle, *rest.Config, dialect.Sink, dialect.SetUp) error {
	return nil
}
func (relisting) On() bool { return true }

// upstreamObjects is an upstream adapter whose PodGroups are the
// clientset's as they are at each read.
type upstreamObjects struct{ cs kubernetes.Interface }

func (upstreamObjects) Watch(context.Context, fwk.Handle, *rest.Config, dialect.Sink, dialect.SetUp) error {
	return nil
}
func (upstreamObjects) On() bool { return true }

// UpstreamPodGroup implements status.UpstreamSource.
func (u upstreamObjects) UpstreamPodGroup(key types.NamespacedName) (*sched.PodGroup, bool) {
	pg, err := u.cs.SchedulingV1beta1().PodGroups(key.Namespace).Get(context.Background(), key.Name, metav1.GetOptions{})
	return pg, err == nil
}

// podGroupClient is the client withPodGroups gave c; nil without one.
func podGroupClient(c *Cache) pgclient.Interface {
	for _, a := range adaptersOf(c) {
		switch r := a.(type) {
		case *schedplugins.Reader:
			return r.Client()
		case relisting:
			return r.client
		}
	}
	return nil
}

// writer is the status writer over c, writing with the clients a test
// gave c's adapters, and the handle's.
func writer(c *Cache) *status.Writer {
	cl := status.Clients{Pods: c.handle.ClientSet(), Nominator: c.handle}
	for _, a := range adaptersOf(c) {
		switch r := a.(type) {
		case *volcano.Reader:
			cl.Volcano, cl.VolcanoObjects = r.Client(), r
		case *schedplugins.Reader:
			cl.PodGroups, cl.PodGroupObjects = r.Client(), r
		case relisting:
			cl.PodGroups, cl.PodGroupObjects = r.client, schedplugins.ReaderOver(r.client, listed(r.client))
		case upstreamObjects:
			cl.UpstreamObjects = r
		}
	}
	if c.adm.On() {
		cl.Queues = wiringOf(c).queues
	}
	return status.New(c, cl)
}

// listed is a lister of client's PodGroups as they are now.
func listed(client pgclient.Interface) pglisters.PodGroupLister {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if list, err := client.SchedulingV1alpha1().PodGroups("").List(context.Background(), metav1.ListOptions{}); err == nil {
		for i := range list.Items {
			_ = idx.Add(&list.Items[i])
		}
	}
	return pglisters.NewPodGroupLister(idx)
}

// syncStatus runs one pass of the status writer over c, as the leader's
// period does.
func syncStatus(c *Cache) { writer(c).Sync(context.Background()) }
