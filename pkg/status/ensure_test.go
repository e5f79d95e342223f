package status

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	vc "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/caldera-sched/caldera/pkg/dialect/volcano"
)

// queueCreator is a volcano.Client that only creates Queues, failing the
// first fails calls.
type queueCreator struct {
	volcano.Client
	fails   int
	created []*vc.Queue
}

func (q *queueCreator) CreateQueue(_ context.Context, in *vc.Queue) error {
	if q.fails > 0 {
		q.fails--
		return errors.New("apiserver unavailable")
	}
	if len(q.created) > 0 {
		return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "queues"}, in.Name)
	}
	q.created = append(q.created, in)
	return nil
}

func TestEnsureVolcanoQueue(t *testing.T) {
	c := &queueCreator{}
	EnsureVolcanoQueue(t.Context(), c)
	if len(c.created) != 1 || c.created[0].Name != "default" || c.created[0].Spec.Weight != 1 {
		t.Fatalf("created %+v, want Volcano's default queue of weight 1", c.created)
	}
	// It exists now: AlreadyExists ends the call without a second queue.
	EnsureVolcanoQueue(t.Context(), c)
	if len(c.created) != 1 {
		t.Errorf("created %d queues, want 1", len(c.created))
	}
	// A failure is retried (after 5 s) until ctx ends: an ended ctx returns.
	ctx, cancel := context.WithCancel(t.Context())
	failing := &queueCreator{fails: 1}
	cancel()
	EnsureVolcanoQueue(ctx, failing)
	if len(failing.created) != 0 {
		t.Errorf("created %+v with an ended context", failing.created)
	}
}
