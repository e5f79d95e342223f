package disruption

import (
	"maps"
	"testing"
)

func TestMissing(t *testing.T) {
	both := map[string]string{KarpenterDoNotDisrupt: "true", ClusterAutoscalerSafeToEvict: "false"}
	tests := []struct {
		name        string
		annotations map[string]string
		want        map[string]string
	}{
		{name: "none: both", annotations: nil, want: both},
		{name: "unrelated ones: both", annotations: map[string]string{"a": "b"}, want: both},
		{name: "Karpenter's only: cluster-autoscaler's", annotations: map[string]string{KarpenterDoNotDisrupt: "true"},
			want: map[string]string{ClusterAutoscalerSafeToEvict: "false"}},
		{name: "a user's opt-out is kept", annotations: map[string]string{KarpenterDoNotDisrupt: "false"},
			want: map[string]string{ClusterAutoscalerSafeToEvict: "false"}},
		{name: "both keys, any values: nothing", annotations: map[string]string{KarpenterDoNotDisrupt: "false", ClusterAutoscalerSafeToEvict: "true"}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Missing(tt.annotations)
			if !maps.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Errorf("Missing(%v) = %v, want %v", tt.annotations, got, tt.want)
			}
			if u := Unprotected(tt.annotations); u != (tt.want != nil) {
				t.Errorf("Unprotected(%v) = %v, want %v", tt.annotations, u, tt.want != nil)
			}
		})
	}
}
