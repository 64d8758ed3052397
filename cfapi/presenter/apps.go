package presenter

import (
	"net/url"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// App is a CF app.
type App struct {
	Resource
	State         string                  `json:"state"`
	Lifecycle     Lifecycle               `json:"lifecycle"`
	Relationships map[string]Relationship `json:"relationships"`
	Links         map[string]Link         `json:"links"`
}

// Lifecycle is an app's lifecycle: empty buildpacks and stack stage with the space's default
// Builder.
type Lifecycle struct {
	Type string        `json:"type"`
	Data LifecycleData `json:"data"`
}

// LifecycleData names an app's buildpacks and stack.
type LifecycleData struct {
	Buildpacks []string `json:"buildpacks"`
	Stack      string   `json:"stack"`
}

// ForApp presents a CFApp: its name is the app's GUID, its namespace the space's.
func ForApp(app *cfv1alpha1.CFApp, base *url.URL) App {
	buildpacks := app.Spec.Lifecycle.Data.Buildpacks
	if buildpacks == nil {
		buildpacks = []string{}
	}
	self := func(elem ...string) Link {
		return Link{Href: href(base, append([]string{"v3", "apps", app.Name}, elem...)...)}
	}
	post := func(elem ...string) Link { l := self(elem...); l.Method = "POST"; return l }
	return App{
		Resource: resource(app, app.Spec.DisplayName, app.Status.Conditions),
		State:    string(app.Spec.DesiredState),
		Lifecycle: Lifecycle{
			Type: string(app.Spec.Lifecycle.Type),
			Data: LifecycleData{Buildpacks: buildpacks, Stack: app.Spec.Lifecycle.Data.Stack},
		},
		Relationships: map[string]Relationship{"space": relationship(app.Namespace)},
		Links: map[string]Link{
			"self":            self(),
			"space":           {Href: href(base, "v3", "spaces", app.Namespace)},
			"processes":       self("processes"),
			"packages":        self("packages"),
			"current_droplet": self("droplets", "current"),
			"droplets":        self("droplets"),
			"start":           post("actions", "start"),
			"stop":            post("actions", "stop"),
		},
	}
}

// CurrentDroplet is an app's current-droplet relationship.
type CurrentDroplet struct {
	Relationship
	Links map[string]Link `json:"links"`
}

// ForCurrentDroplet presents the current-droplet relationship of an app that has one.
func ForCurrentDroplet(app *cfv1alpha1.CFApp, base *url.URL) CurrentDroplet {
	return CurrentDroplet{
		Relationship: relationship(app.Spec.CurrentDropletRef.Name),
		Links: map[string]Link{
			"self":    {Href: href(base, "v3", "apps", app.Name, "relationships", "current_droplet")},
			"related": {Href: href(base, "v3", "apps", app.Name, "droplets", "current")},
		},
	}
}
