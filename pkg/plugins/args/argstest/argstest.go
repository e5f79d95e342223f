// Package argstest checks how Caldera plugins treat bad args, for the
// plugins' own tests.
package argstest

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/status"
)

// Bad is plugin args (JSON) that New must refuse, with the field its error
// must name.
type Bad struct {
	Name, Raw, Field string
}

// NewFunc is a Caldera plugin's factory.
type NewFunc func(context.Context, runtime.Object, fwk.Handle, *cache.Provider) (fwk.Plugin, error)

// Refused checks that newFn, given h, refuses every case with an error
// naming its field: a misconfigured profile must fail at start-up, saying
// which setting is wrong. Pass a nil h, or one that answers only what New
// reads before its args, to check that bad args are refused before New
// touches the handle.
func Refused(t *testing.T, newFn NewFunc, h fwk.Handle, cases []Bad) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			obj := &runtime.Unknown{Raw: []byte(tc.Raw), ContentType: runtime.ContentTypeJSON}
			_, err := newFn(context.Background(), obj, h, cache.NewProvider(status.AlwaysLeading()))
			if err == nil || !strings.Contains(err.Error(), tc.Field) {
				t.Fatalf("New(%s) error = %v, want one naming %s", tc.Raw, err, tc.Field)
			}
		})
	}
}
