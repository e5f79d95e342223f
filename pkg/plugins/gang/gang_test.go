package gang

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/caldera-sched/caldera/pkg/cache/cachetest"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// BenchmarkPreEnqueue runs the plugin's PreEnqueue with the cache holding 1k
// and 100k member pods (groups of 10): the cost must not grow with the cache.
func BenchmarkPreEnqueue(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1_000, 100_000} {
		pgs, pods := cachetest.Gangs("ns", n/10, 10)
		c := cachetest.NewForTest(b, pgs, pods)
		g := &Gang{cache: c, plans: c.Evictions()}
		unknown := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "u", Labels: map[string]string{gangbook.PodGroupLabel: "unknown"}}}
		solo := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "solo"}}
		for _, tc := range []struct {
			name string
			pod  *v1.Pod
			code fwk.Code
		}{
			{"enqueueable", pods[n/2], fwk.Success},
			{"no-podgroup", unknown, fwk.UnschedulableAndUnresolvable},
			{"not-a-member", solo, fwk.Success},
		} {
			b.Run(fmt.Sprintf("pods=%d/%s", n, tc.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if st := g.PreEnqueue(ctx, tc.pod); st.Code() != tc.code {
						b.Fatalf("PreEnqueue = %v, want %v", st, tc.code)
					}
				}
			})
		}
	}
}

// TestSignPod checks that CalderaGang signs every pod without a fragment of
// its own, so the profile keeps opportunistic batching and the signature
// depends only on the plugins that filter and score nodes.
func TestSignPod(t *testing.T) {
	g := &Gang{}
	for _, pod := range []*v1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "member", Labels: map[string]string{gangbook.PodGroupLabel: "pg"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "solo"}},
	} {
		fragments, st := g.SignPod(context.Background(), pod)
		if !st.IsSuccess() || len(fragments) != 0 {
			t.Errorf("SignPod(%s) = %v, %v; want no fragments and success", pod.Name, fragments, st)
		}
	}
}
