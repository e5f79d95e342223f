package main

import (
	"testing"
	"time"

	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	"sigs.k8s.io/yaml"
)

// The Job pods' completion stage is a valid KWOK stage with the flag's
// delay, selecting Running Job pods without the annotation.
func TestJobPodCompleteStage(t *testing.T) {
	var s v1alpha1.Stage
	if err := yaml.UnmarshalStrict([]byte(jobPodCompleteStage(20*time.Second)), &s); err != nil {
		t.Fatalf("decoding: %v", err)
	}
	if _, err := internalversion.ConvertToInternalStage(&s); err != nil {
		t.Fatalf("converting: %v", err)
	}
	if d := s.Spec.Delay; d == nil || d.DurationMilliseconds == nil || *d.DurationMilliseconds != 20000 || d.DurationFrom != nil {
		t.Errorf("delay %+v, want 20000 ms and no annotation", d)
	}
	if s.Spec.Next.StatusTemplate == "" {
		t.Error("the stage sets no status")
	}
	var job, annotation bool
	for _, e := range s.Spec.Selector.MatchExpressions {
		job = job || (e.Key == ".metadata.ownerReferences.[].kind" && len(e.Values) == 1 && e.Values[0] == "Job")
		annotation = annotation || (e.Key == `.metadata.annotations["`+completeAfterAnnotation+`"]` && e.Operator == "DoesNotExist")
	}
	if !job || !annotation {
		t.Errorf("selector %+v, want Job pods without %s", s.Spec.Selector, completeAfterAnnotation)
	}
}
