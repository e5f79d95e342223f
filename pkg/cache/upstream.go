package cache

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	schedlisters "k8s.io/client-go/listers/scheduling/v1beta1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"

	sched "k8s.io/api/scheduling/v1beta1"

	"github.com/caldera-sched/caldera/pkg/dialect/upstream"
	"github.com/caldera-sched/caldera/pkg/groupspec"
)

// Upstream's gangs (scheduling.k8s.io/v1beta1 PodGroups, feature gate
// GenericWorkload) are a third source of the cache's one group model:
// pkg/dialect/upstream turns each PodGroup into the model object a
// scheduler-plugins PodGroup is, marked with upstream's apiVersion, and
// pods join it by spec.schedulingGroup.podGroupName (GroupKeyOf). From
// then on gang readiness, admission, fair share, reclaim and placement do
// not know the source; the status is Caldera's conditions beside
// upstream's own (upstreamProgressLocked, written by pkg/status).
//
// One barrier holds these pods: Caldera's Permit. kube-scheduler's own
// gang machinery (the GangScheduling plugin, which its defaults add, and
// the PodGroup scheduling cycle, in which its queue hands out a whole
// group) runs only with the GenericWorkload gate on in the scheduler's own
// process. So the source is on only when the API server serves the API and
// that gate is off in this process; with the gate on, upstream's barrier
// owns these pods and Caldera sees plain pods (docs/gang-apis.md says why).

// upstreamState is the cache's reading of upstream's PodGroups; the zero
// value is off.
type upstreamState struct {
	on       bool
	pgLister schedlisters.PodGroupLister
}

// UpstreamOn reports whether the cache reads upstream's PodGroups: the
// status writer writes their conditions only then.
func (c *Cache) UpstreamOn() bool { return c.upstream.on }

// watchUpstream sets up the informer of upstream's PodGroups (client-go's
// typed informer: the API is built in) when the API server serves it and
// this process leaves these gangs to Caldera (see above). Discovered once,
// here, as Volcano's API is. Absent, it does nothing.
func (c *Cache) watchUpstream(ctx context.Context, h fwk.Handle) error {
	logger := klog.FromContext(ctx)
	if kubeSchedulerOwnsUpstreamGangs() {
		logger.Info("The GenericWorkload feature gate is on in the scheduler: kube-scheduler's own gang scheduling holds pods of scheduling.k8s.io PodGroups, so Caldera schedules them as plain pods")
		return nil
	}
	served, err := upstreamServed(h)
	if err != nil {
		return err
	}
	if !served {
		logger.V(2).Info("Upstream's PodGroup API is not served; reading no upstream PodGroups", "apiVersion", upstream.APIVersion)
		return nil
	}
	factory := informers.NewSharedInformerFactory(h.ClientSet(), 0)
	pgInf := factory.Scheduling().V1beta1().PodGroups()
	c.upstream.on, c.upstream.pgLister = true, pgInf.Lister()
	reg, err := pgInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onGroup(logger, upstreamSpec(obj)) },
		UpdateFunc: func(old, obj any) { c.onGroupUpdate(logger, upstreamSpec(old), upstreamSpec(obj)) },
		DeleteFunc: func(obj any) { c.onGroupDelete(logger, upstreamSpec(obj)) },
	})
	if err != nil {
		return err
	}
	return c.setUp("upstream's PodGroups", func(ctx context.Context, logger klog.Logger) error {
		factory.Start(ctx.Done())
		syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
		defer cancel()
		if !cache.WaitFor(syncCtx, "", reg.HasSyncedChecker()) {
			return fmt.Errorf("upstream's PodGroups did not sync within %v: can the scheduler list scheduling.k8s.io podgroups?", syncTimeout)
		}
		logger.V(2).Info("Caldera cache synced upstream's PodGroups")
		return nil
	})
}

// kubeSchedulerOwnsUpstreamGangs reports whether kube-scheduler's own gang
// machinery runs in this process (the GenericWorkload gate is on here):
// then pods of upstream PodGroups are plain pods to Caldera, whose barrier
// must not hold them too.
func kubeSchedulerOwnsUpstreamGangs() bool {
	return utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload)
}

// upstreamGroupName is the upstream PodGroup pod joins, when Caldera
// schedules upstream's gangs (kubeSchedulerOwnsUpstreamGangs is false).
// The gate is read only for a pod that names a group, so other pods pay
// nothing.
func upstreamGroupName(pod *v1.Pod) (string, bool) {
	name, ok := upstream.GroupName(pod)
	if !ok || kubeSchedulerOwnsUpstreamGangs() {
		return "", false
	}
	return name, true
}

// upstreamServed reports whether the API server serves upstream's
// PodGroups. Not served (GenericWorkload off, or the group version not
// enabled by --runtime-config) is no error; failing to ask is.
func upstreamServed(h fwk.Handle) (bool, error) {
	if h.ClientSet() == nil {
		return false, nil
	}
	list, err := h.ClientSet().Discovery().ServerResourcesForGroupVersion(upstream.APIVersion)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discovering %s: %w", upstream.APIVersion, err)
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "podgroups" }), nil
}

// upstreamSpec reads an informer event's upstream PodGroup as a group
// spec (nil for anything else, which the handlers ignore).
func upstreamSpec(obj any) *groupspec.Spec {
	pg, ok := objectOf[*sched.PodGroup](obj)
	if !ok || pg == nil {
		return nil
	}
	return upstream.Spec(pg)
}

// UpstreamPodGroup returns the upstream PodGroup as the informer has it.
func (c *Cache) UpstreamPodGroup(key types.NamespacedName) (*sched.PodGroup, bool) {
	if !c.upstream.on {
		return nil, false
	}
	pg, err := c.upstream.pgLister.PodGroups(key.Namespace).Get(key.Name)
	return pg, err == nil
}
