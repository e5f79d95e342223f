package snapshot

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// Handle returns the part of fwk.Handle that Caldera's cache uses when no
// scheduler runs around it (cache.Provider.Get): a client config and
// clientset, an informer factory the caller starts, profile name profile,
// an Event recorder that drops everything (a snapshot is never written
// to), no waiting pods, and Activate doing nothing. Any other method
// panics on the nil embedded interface: a cache that starts calling one
// must say so here first.
func Handle(profile string, cfg *rest.Config, cs kubernetes.Interface, factory informers.SharedInformerFactory) fwk.Handle {
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
