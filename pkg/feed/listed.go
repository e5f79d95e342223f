package feed

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/admission"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/dialect/schedplugins"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/podslim"
)

// Listed is a copy of what a cluster holds, as a tool lists it once: the
// objects the feed's informers would list, of the scheduler-plugins
// dialect (Volcano's and upstream's PodGroups are not read).
type Listed struct {
	Pods       []*v1.Pod
	Nodes      []*v1.Node
	Namespaces []*v1.Namespace
	PodGroups  []*v1alpha1.PodGroup
	Queues     []*qapi.Queue
	Jobs       []*batchv1.Job
	// Quotas are read only when admission checks ResourceQuotas.
	Quotas []*v1.ResourceQuota
}

// Deliver seals p (its settings are applied; no plugin factory may set
// anything up afterwards) and hands its cache l as the feed's informers
// hand their initial lists: each pod to the entry point of the informer
// that selects it, the finished ones slimmed as that informer slims them,
// the pods last, then the gang members said to be listed. It builds no
// client and starts no informer, so a tool can run the cache on a copy of
// a cluster without an API server. The cache keeps l's objects: they must
// not change afterwards.
func Deliver(logger klog.Logger, p *cache.Provider, l *Listed) (*cache.Cache, error) {
	c, err := p.Seal()
	if err != nil {
		return nil, err
	}
	for _, pg := range l.PodGroups {
		c.SetGroup(logger, schedplugins.Spec(pg))
	}
	if c.Admitting() {
		for _, q := range l.Queues {
			c.ApplyQueue(q)
		}
		for _, ns := range l.Namespaces {
			c.ApplyNamespace(ns)
		}
		for _, job := range l.Jobs {
			applyJob(c, slimmed(admission.SlimJob, job))
		}
		if c.ChecksResourceQuota() {
			if err := setQuotas(c, l.Quotas); err != nil {
				return nil, err
			}
		}
	}
	for _, n := range l.Nodes {
		c.ApplyNode(logger, n)
	}
	for _, pod := range l.Pods {
		deliverPod(logger, c, pod)
	}
	c.MembersListed(logger)
	return c, nil
}

// deliverPod hands pod to c as the informer that selects it would: an
// unfinished pod as the scheduler's; a finished one as the finished
// members' (labelled members, then Job pods), slimmed as they slim it;
// any other finished pod is listed by none.
func deliverPod(logger klog.Logger, c *cache.Cache, pod *v1.Pod) {
	if pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed {
		c.ApplyPod(logger, nil, pod)
		return
	}
	if _, labelled := pod.Labels[gangbook.PodGroupLabel]; labelled {
		c.ApplyFinishedPod(logger, nil, slimmed(podslim.Pod, pod))
		return
	}
	if _, ok := pod.Labels[batchv1.JobNameLabel]; ok {
		c.ApplyFinishedPod(logger, nil, slimmed(podslim.JobPod, pod))
	}
}

// slimmed is obj through an informer's transform.
func slimmed[T any](transform func(any) (any, error), obj T) T {
	out, err := transform(obj)
	if t, ok := out.(T); ok && err == nil {
		return t
	}
	return obj
}

// setQuotas gives c a lister over quotas, as the scheduler's informer
// factory's would be.
func setQuotas(c *cache.Cache, quotas []*v1.ResourceQuota) error {
	idx := clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc,
		clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc})
	for _, q := range quotas {
		if err := idx.Add(q); err != nil {
			return fmt.Errorf("indexing ResourceQuota %s/%s: %w", q.Namespace, q.Name, err)
		}
	}
	c.SetQuotas(corelisters.NewResourceQuotaLister(idx))
	return nil
}

// DetachedHandle returns the part of fwk.Handle that Caldera's cache uses
// when no scheduler runs around it (cache.Provider.Get), for profile
// profile: an Event recorder that drops everything (nothing is written),
// no waiting pods, and Activate doing nothing. It has no client: any other
// method panics on the nil embedded interface, so a cache that starts
// calling one must say so here first.
func DetachedHandle(profile string) fwk.Handle { return ClientHandle(profile, nil, nil, nil) }

// ClientHandle is DetachedHandle with a client configuration, clientset
// and informer factory (the caller starts it), for a cache that a Feed
// wires to an API server without a scheduler around it.
func ClientHandle(profile string, cfg *rest.Config, cs kubernetes.Interface, factory informers.SharedInformerFactory) fwk.Handle {
	return &handle{profile: profile, cfg: cfg, cs: cs, factory: factory}
}

type handle struct {
	fwk.Handle
	profile string
	cfg     *rest.Config
	cs      kubernetes.Interface
	factory informers.SharedInformerFactory
}

func (h *handle) ProfileName() string                                    { return h.profile }
func (h *handle) EventRecorder() events.EventRecorderLogger              { return &events.FakeRecorder{} }
func (h *handle) KubeConfig() *rest.Config                               { return h.cfg }
func (h *handle) ClientSet() kubernetes.Interface                        { return h.cs }
func (h *handle) SharedInformerFactory() informers.SharedInformerFactory { return h.factory }
func (h *handle) GetWaitingPod(types.UID) fwk.WaitingPod                 { return nil }
func (h *handle) Activate(klog.Logger, map[string]*v1.Pod)               {}
func (h *handle) NominatedPodsForNode(string) []fwk.PodInfo              { return nil }
func (h *handle) DeleteNominatedPodIfExists(*v1.Pod)                     {}
