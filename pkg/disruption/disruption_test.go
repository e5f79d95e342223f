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

func TestOwed(t *testing.T) {
	both := map[string]string{KarpenterDoNotDisrupt: "true", ClusterAutoscalerSafeToEvict: "false"}
	tests := []struct {
		name string
		m    Member
		want bool
	}{
		{name: "bound member of a gang, unannotated: owed", m: Member{Bound: true, MinMember: 2}, want: true},
		{name: "one key missing: owed", m: Member{Bound: true, MinMember: 8, Annotations: map[string]string{KarpenterDoNotDisrupt: "false"}}, want: true},
		{name: "both keys: not owed", m: Member{Bound: true, MinMember: 8, Annotations: both}},
		{name: "not bound: not owed", m: Member{MinMember: 8}},
		{name: "finished: not owed", m: Member{Bound: true, Finished: true, MinMember: 8}},
		{name: "gang of one: not owed", m: Member{Bound: true, MinMember: 1}},
		{name: "no minimum: not owed", m: Member{Bound: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Owed(tt.m); got != tt.want {
				t.Errorf("Owed(%+v) = %v, want %v", tt.m, got, tt.want)
			}
		})
	}
}
