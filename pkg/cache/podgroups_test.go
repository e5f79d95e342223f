package cache

import (
	"k8s.io/klog/v2"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/dialect"
	"github.com/caldera-sched/caldera/pkg/dialect/schedplugins"
	"github.com/caldera-sched/caldera/pkg/groupspec"
)

// The tests deliver scheduler-plugins PodGroups as the adapter's informer
// does: read as specs.

func pgSpec(obj any) *groupspec.Spec {
	pg, ok := dialect.ObjectOf[*v1alpha1.PodGroup](obj)
	if !ok || pg == nil {
		return nil
	}
	return schedplugins.Spec(pg)
}

func (c *Cache) onPodGroup(logger klog.Logger, obj any) { c.SetGroup(logger, pgSpec(obj)) }

func (c *Cache) onPodGroupUpdate(logger klog.Logger, old, obj any) {
	c.UpdateGroup(logger, pgSpec(old), pgSpec(obj))
}

func (c *Cache) onPodGroupDelete(logger klog.Logger, obj any) { c.DeleteGroup(logger, pgSpec(obj)) }
