package cache

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/caldera-sched/caldera/pkg/dialect/volcano"
)

// Finished members of Volcano's and upstream's gangs. The finished-member
// informer of newCache selects the PodGroup label, which these pods do not
// carry, and one cannot select on an annotation or on
// spec.schedulingGroup; so, when either API is read, one more informer
// lists finished pods, keeps those that join a group (slimmed) and cuts the
// rest to their identity. Job pods are left to the finished Job pods
// informer (slimJobPod keeps theirs too), so that no pod arrives twice.

// watchJoinedFinished sets up that informer when Volcano's or upstream's
// PodGroups are read; otherwise it does nothing.
func (c *Cache) watchJoinedFinished(ctx context.Context, h fwk.Handle) error {
	if !c.readsByName() {
		return nil
	}
	logger := klog.FromContext(ctx)
	factory := informers.NewSharedInformerFactoryWithOptions(h.ClientSet(), 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = "!" + PodGroupLabel + ",!" + batchv1.JobNameLabel
			o.FieldSelector = finishedSelector
		}),
		informers.WithTransform(slimJoinedPod))
	reg, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool { pod := asPod(obj); return pod != nil && joinsByName(pod) },
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.onFinishedPod(logger, obj) },
			UpdateFunc: func(old, obj any) { c.onFinishedPodUpdate(logger, old, obj) },
			DeleteFunc: func(obj any) { c.onFinishedPodDelete(logger, obj) },
		},
	})
	if err != nil {
		return err
	}
	return c.setUp("finished members of Volcano's and upstream's gangs", func(ctx context.Context, logger klog.Logger) error {
		factory.Start(ctx.Done())
		syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
		defer cancel()
		if !cache.WaitFor(syncCtx, "", reg.HasSyncedChecker()) {
			return fmt.Errorf("finished members of Volcano's and upstream's gangs did not sync within %v", syncTimeout)
		}
		return nil
	})
}

// joinsByName reports whether pod joins a group by Volcano's group-name
// annotation or upstream's spec.schedulingGroup rather than by the label.
func joinsByName(pod *v1.Pod) bool {
	if _, labelled := pod.Labels[PodGroupLabel]; labelled {
		return false
	}
	_, ok := podGroupName(pod)
	return ok
}

// slimJoinedPod slims a finished pod as slimPod does, keeping the Volcano
// group-name annotation that makes it a member, and its task (slimPod keeps
// spec.schedulingGroup); a pod that joins no group keeps only its
// identity, since the informer holds every finished pod. Idempotent.
func slimJoinedPod(obj any) (any, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return slimPod(obj)
	}
	if !joinsByName(pod) {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID,
			ResourceVersion: pod.ResourceVersion, Labels: pod.Labels}}, nil
	}
	out, err := slimPod(pod)
	if err != nil {
		return nil, err
	}
	if name, ok := volcano.GroupName(pod); ok {
		slim := out.(*v1.Pod)
		slim.Annotations = map[string]string{volcano.GroupNameAnnotation: name}
		if task := podTask(pod); task != "" {
			// A succeeded member counts towards its task's minimum.
			slim.Annotations[volcano.TaskSpecKey] = task
		}
	}
	return out, nil
}
