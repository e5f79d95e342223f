package volcano

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	vc "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"
)

// Client is what Caldera writes of Volcano's API: a narrow interface over
// Volcano's generated clientset (ClientFor), which tests replace with a
// map.
type Client interface {
	// PatchPodGroup applies a JSON merge patch to a PodGroup.
	PatchPodGroup(ctx context.Context, namespace, name string, mergePatch []byte) error
	UpdateQueueStatus(ctx context.Context, q *vc.Queue) error
	// CreateQueue creates a Volcano Queue.
	CreateQueue(ctx context.Context, q *vc.Queue) error
}

// ClientFor returns the Client that writes with cs.
func ClientFor(cs vcclient.Interface) Client { return clientset{cs} }

type clientset struct{ cs vcclient.Interface }

func (c clientset) PatchPodGroup(ctx context.Context, ns, name string, patch []byte) error {
	_, err := c.cs.SchedulingV1beta1().PodGroups(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

func (c clientset) UpdateQueueStatus(ctx context.Context, q *vc.Queue) error {
	_, err := c.cs.SchedulingV1beta1().Queues().UpdateStatus(ctx, q, metav1.UpdateOptions{})
	return err
}

func (c clientset) CreateQueue(ctx context.Context, q *vc.Queue) error {
	_, err := c.cs.SchedulingV1beta1().Queues().Create(ctx, q, metav1.CreateOptions{})
	return err
}
