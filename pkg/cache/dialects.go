package cache

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/caldera-sched/caldera/pkg/dialect/volcano"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/groupspec"
)

// Gangs come in dialects: scheduler-plugins' PodGroups (read here, the
// cache's own informer, since the gangs Caldera makes for annotations are
// of that API too), and each other API through its adapter (pkg/dialect),
// which the command hands to the cache. Every adapter hands over groups as
// groupspec.Spec through the methods below (the cache is a dialect.Sink),
// so from then on gang readiness, admission, fair share, reclaim and
// placement do not know the source.
//
// All dialects name groups by namespace and name, so they share one key
// space: the PodGroup seen first holds a name, and one of another dialect
// under the same name is ignored until the first is deleted and the second
// changes (shadowedLocked). Caldera's own Queue of a name wins over a
// dialect's (Volcano's "default" queue among them): queueShadowedLocked.

// podTask names the task (role) of a gang member, by the dialect's own
// means: Volcano's task-spec annotation or label; "" for none.
func podTask(pod *v1.Pod) string { return volcano.TaskName(pod) }

// The Sink's methods: SetGroup and DeleteGroup (handlers.go), UpdateGroup
// (replace.go), SetQueue (queuehandlers.go).

// shadowedLocked reports whether s, of one dialect, names a group whose
// object is of another: the first holds the name (see above).
func shadowedLocked(logger klog.Logger, g *gangbook.Group, s *groupspec.Spec) bool {
	if g.Obj == nil || g.Obj.Source.Dialect == s.Source.Dialect {
		return false
	}
	logger.V(2).Info("Two gang APIs name one PodGroup; the one seen first is scheduled", "podGroup", g.Key.String(),
		"held", g.Obj.Source.APIVersion, "ignored", s.Source.APIVersion)
	return true
}
