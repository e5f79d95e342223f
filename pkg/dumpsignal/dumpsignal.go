// Package dumpsignal answers the process's dump signals: SIGUSR1 writes the
// Caldera cache as a JSON file, SIGUSR2 logs it. Signals belong to the
// process, so the command installs the handler, not the cache.
package dumpsignal

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"
)

// Dumper is what the signals dump. *cache.Cache is one.
type Dumper interface {
	// Dump returns the state as JSON.
	Dump() ([]byte, error)
	// DumpToFile writes Dump to a new file in dir ("" for the default
	// directory) and returns its path.
	DumpToFile(dir string) (string, error)
}

// Serve answers SIGUSR1 and SIGUSR2 with d's dumps until ctx ends. The
// signals are caught once Serve returns (a signal sent after that is never
// the process's default action, which for SIGUSR1 is to exit).
func Serve(ctx context.Context, d Dumper) {
	logger := klog.FromContext(ctx)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case sig := <-ch:
				handle(logger, d, sig)
			}
		}
	}()
}

func handle(logger klog.Logger, d Dumper, sig os.Signal) {
	switch sig {
	case syscall.SIGUSR1:
		path, err := d.DumpToFile("")
		if err != nil {
			logger.Error(err, "Cannot dump the Caldera cache")
			return
		}
		logger.Info("Dumped the Caldera cache", "file", path)
	case syscall.SIGUSR2:
		data, err := d.Dump()
		if err != nil {
			logger.Error(err, "Cannot dump the Caldera cache")
			return
		}
		logger.Info("Caldera cache dump", "cache", string(data))
	}
}
