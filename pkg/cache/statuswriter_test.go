package cache

import (
	"context"

	"github.com/caldera-sched/caldera/pkg/status"
)

// writer is the status writer over c, writing with c's clients: the fake
// PodGroup and Queue clientsets a test installed, and the handle's.
func writer(c *Cache) *status.Writer {
	cl := status.Clients{PodGroups: c.pgClient, Pods: c.handle.ClientSet(), Nominator: c.handle, Volcano: c.volcano.client}
	if c.adm.on() {
		cl.Queues = c.adm.qclient
	}
	return status.New(c, cl)
}

// syncStatus runs one pass of the status writer over c, as the leader's
// period does.
func syncStatus(c *Cache) { writer(c).Sync(context.Background()) }
