package localcluster

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// readyzInterval is how often WaitReadyz (and the waits after it) poll.
const readyzInterval = 50 * time.Millisecond

// WaitReadyz polls GET /readyz through client until it answers 200, for at
// most timeout. exited, when not nil, is asked before each poll whether the
// component has stopped (a non-nil error ends the wait with it), so a
// component that dies while starting fails the wait at once rather than at
// the timeout. The error names the last answer.
func WaitReadyz(ctx context.Context, client rest.Interface, timeout time.Duration, exited func() error) error {
	last := "no answer"
	err := wait.PollUntilContextTimeout(ctx, readyzInterval, timeout, true, func(ctx context.Context) (bool, error) {
		if exited != nil {
			if err := exited(); err != nil {
				return false, err
			}
		}
		status := 0
		body, err := client.Get().AbsPath("/readyz").Do(ctx).StatusCode(&status).Raw()
		if status == 200 {
			return true, nil
		}
		if status != 0 {
			last = fmt.Sprintf("status %d: %s", status, body)
		} else if err != nil {
			last = err.Error()
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last /readyz: %s)", err, last)
	}
	return nil
}
