package karpenter

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// CreateNodePool creates the KWOKNodeClass and the NodePool of o (its
// defaults filled) and waits up to timeout until Karpenter reports the
// NodePool Ready, which it does once the NodeClass is Ready: before that,
// Karpenter would not provision for it. It returns the completed options.
func CreateNodePool(ctx context.Context, dyn dynamic.Interface, o NodePoolOptions, timeout time.Duration) (NodePoolOptions, error) {
	o.Complete()
	if _, err := dyn.Resource(KWOKNodeClasses).Create(ctx, NodeClass(o), metav1.CreateOptions{}); err != nil {
		return o, fmt.Errorf("creating KWOKNodeClass %s: %w", o.Name, err)
	}
	if _, err := dyn.Resource(NodePools).Create(ctx, NodePool(o), metav1.CreateOptions{}); err != nil {
		return o, fmt.Errorf("creating NodePool %s: %w", o.Name, err)
	}
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		np, err := dyn.Resource(NodePools).Get(ctx, o.Name, metav1.GetOptions{})
		if err != nil {
			lastErr = err
			return false, nil
		}
		return ConditionTrue(np, "Ready"), nil
	})
	if err != nil {
		return o, fmt.Errorf("NodePool %s not Ready within %v: %v (last error: %v)", o.Name, timeout, err, lastErr)
	}
	return o, nil
}
