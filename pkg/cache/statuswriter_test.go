package cache

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	pglisters "sigs.k8s.io/scheduler-plugins/pkg/generated/listers/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/status"
)

// writer is the status writer over c, writing with c's clients: the fake
// PodGroup and Queue clientsets a test installed, and the handle's. The
// writer reads scheduler-plugins PodGroups as the informer has them, so
// the PodGroup lister is filled from the fake clientset's objects.
func writer(c *Cache) *status.Writer {
	cl := status.Clients{PodGroups: c.pgClient, Pods: c.handle.ClientSet(), Nominator: c.handle, Volcano: c.volcano.client}
	if c.adm.on() {
		cl.Queues = c.adm.qclient
	}
	if c.pgClient != nil {
		idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		if list, err := c.pgClient.SchedulingV1alpha1().PodGroups("").List(context.Background(), metav1.ListOptions{}); err == nil {
			for i := range list.Items {
				_ = idx.Add(&list.Items[i])
			}
		}
		c.pgLister = pglisters.NewPodGroupLister(idx)
	}
	return status.New(c, cl)
}

// syncStatus runs one pass of the status writer over c, as the leader's
// period does.
func syncStatus(c *Cache) { writer(c).Sync(context.Background()) }
