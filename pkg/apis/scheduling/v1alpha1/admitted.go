package v1alpha1

import "time"

// AdmittedSince reports whether annotations record an admission of the
// object created at created (AdmittedAtAnnotation): an admission written
// before that time belongs to an earlier object of the name, whose
// annotations a recreated one may have been copied from. A value that is
// not a time counts as admitted: the annotation was written on purpose.
func AdmittedSince(annotations map[string]string, created time.Time) bool {
	v, ok := annotations[AdmittedAtAnnotation]
	if !ok {
		return false
	}
	at, err := time.Parse(time.RFC3339, v)
	return err != nil || !at.Before(created.Truncate(time.Second))
}
