// Package probing is a stand-in for pkg.package-operator.run/boxcutter/probing, written for
// upgrade-gate's integration tests (tests/tools/olm) because the Go module proxy refuses every version
// of the real module (403 Forbidden). It declares only what operator-controller v1.11.0's non-test code
// uses, so that operator-controller builds unmodified; none of it is boxcutter's code.
//
// What works: operator-controller's default Helm applier, which uses no probes. What does not: the
// Boxcutter applier (feature gate BoxcutterRuntime), the only user of probes; they evaluate nothing and
// return a zero ProbeResult. The Helm applier's drift-detection watches do not work either.
package probing

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"pkg.package-operator.run/boxcutter/machinery/types"
)

// Prober checks an object. Every stand-in prober returns a zero ProbeResult.
type Prober interface {
	Probe(obj client.Object) types.ProbeResult
}

// And combines probers.
type And []Prober

// Probe returns a zero ProbeResult.
func (And) Probe(client.Object) types.ProbeResult { return types.ProbeResult{} }

// ConditionProbe checks a status condition. Its fields match operator-controller's ConditionEqualProbe.
type ConditionProbe struct {
	Type   string
	Status string
}

// Probe returns a zero ProbeResult.
func (*ConditionProbe) Probe(client.Object) types.ProbeResult { return types.ProbeResult{} }

// FieldsEqualProbe compares two fields. Its fields match operator-controller's FieldsEqualProbe.
type FieldsEqualProbe struct {
	FieldA string
	FieldB string
}

// Probe returns a zero ProbeResult.
func (*FieldsEqualProbe) Probe(client.Object) types.ProbeResult { return types.ProbeResult{} }

// FieldValueProbe checks a field's value. Its fields match operator-controller's FieldValueProbe.
type FieldValueProbe struct {
	FieldPath string
	Value     string
}

// Probe returns a zero ProbeResult.
func (*FieldValueProbe) Probe(client.Object) types.ProbeResult { return types.ProbeResult{} }

// GroupKindSelector applies Prober to objects of one GroupKind.
type GroupKindSelector struct {
	GroupKind schema.GroupKind
	Prober    Prober
}

// Probe returns a zero ProbeResult.
func (*GroupKindSelector) Probe(client.Object) types.ProbeResult { return types.ProbeResult{} }

// LabelSelector applies Prober to objects matching Selector.
type LabelSelector struct {
	Selector labels.Selector
	Prober   Prober
}

// Probe returns a zero ProbeResult.
func (*LabelSelector) Probe(client.Object) types.ProbeResult { return types.ProbeResult{} }

// ObservedGenerationProbe wraps Prober.
type ObservedGenerationProbe struct {
	Prober Prober
}

// Probe returns a zero ProbeResult.
func (*ObservedGenerationProbe) Probe(client.Object) types.ProbeResult { return types.ProbeResult{} }
