package dumpsignal

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/klog/v2"
)

// dumper reports each dump on calls.
type dumper struct{ calls chan string }

func (d dumper) Dump() ([]byte, error) {
	d.calls <- "Dump"
	return []byte(`{"queues":[]}`), nil
}

func (d dumper) DumpToFile(dir string) (string, error) {
	d.calls <- "DumpToFile(" + dir + ")"
	return "/tmp/caldera-cache-x.json", nil
}

func TestServe(t *testing.T) {
	logged := make(chan string, 16)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), funcr.New(func(_, args string) { logged <- args }, funcr.Options{})))
	defer cancel()
	d := dumper{calls: make(chan string, 4)}
	Serve(ctx, d)
	for _, tt := range []struct {
		sig       syscall.Signal
		call, log string
	}{
		{syscall.SIGUSR1, "DumpToFile()", `"Dumped the Caldera cache" "file"="/tmp/caldera-cache-x.json"`},
		{syscall.SIGUSR2, "Dump", `"Caldera cache dump" "cache"="{\"queues\":[]}"`},
	} {
		// Serve has called signal.Notify before returning: the signal is ours.
		if err := syscall.Kill(syscall.Getpid(), tt.sig); err != nil {
			t.Fatal(err)
		}
		select {
		case call := <-d.calls:
			if call != tt.call {
				t.Errorf("%v: called %s, want %s", tt.sig, call, tt.call)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%v was not handled within 10s", tt.sig)
		}
		select {
		case line := <-logged:
			if !strings.Contains(line, tt.log) {
				t.Errorf("%v: logged %s, want %s", tt.sig, line, tt.log)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: nothing logged within 10s", tt.sig)
		}
	}
}
