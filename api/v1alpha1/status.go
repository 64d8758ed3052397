package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The accessors below let one condition setter and one status reporter serve every kind that
// has conditions.

// GetConditions returns the org's conditions.
func (o *CFOrg) GetConditions() []metav1.Condition { return o.Status.Conditions }

// SetConditions replaces the org's conditions.
func (o *CFOrg) SetConditions(c []metav1.Condition) { o.Status.Conditions = c }

// SetObservedGeneration records the generation the org's status describes.
func (o *CFOrg) SetObservedGeneration(g int64) { o.Status.ObservedGeneration = g }

// GetConditions returns the space's conditions.
func (s *CFSpace) GetConditions() []metav1.Condition { return s.Status.Conditions }

// SetConditions replaces the space's conditions.
func (s *CFSpace) SetConditions(c []metav1.Condition) { s.Status.Conditions = c }

// SetObservedGeneration records the generation the space's status describes.
func (s *CFSpace) SetObservedGeneration(g int64) { s.Status.ObservedGeneration = g }

// GetConditions returns the app's conditions.
func (a *CFApp) GetConditions() []metav1.Condition { return a.Status.Conditions }

// SetConditions replaces the app's conditions.
func (a *CFApp) SetConditions(c []metav1.Condition) { a.Status.Conditions = c }

// SetObservedGeneration records the generation the app's status describes.
func (a *CFApp) SetObservedGeneration(g int64) { a.Status.ObservedGeneration = g }

// GetConditions returns the build's conditions.
func (b *CFBuild) GetConditions() []metav1.Condition { return b.Status.Conditions }

// SetConditions replaces the build's conditions.
func (b *CFBuild) SetConditions(c []metav1.Condition) { b.Status.Conditions = c }

// SetObservedGeneration records the generation the build's status describes.
func (b *CFBuild) SetObservedGeneration(g int64) { b.Status.ObservedGeneration = g }

// GetConditions returns the process's conditions.
func (p *CFProcess) GetConditions() []metav1.Condition { return p.Status.Conditions }

// SetConditions replaces the process's conditions.
func (p *CFProcess) SetConditions(c []metav1.Condition) { p.Status.Conditions = c }

// SetObservedGeneration records the generation the process's status describes.
func (p *CFProcess) SetObservedGeneration(g int64) { p.Status.ObservedGeneration = g }
