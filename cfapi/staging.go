package cfapi

// stagingRoutes are the endpoints of packages, builds, droplets and staging logs: the staging
// half of cf push and cf restage. Like the app routes, they read and write as the user, in the
// spaces the user sees.
func (s *server) stagingRoutes() map[string]handlerFunc {
	return map[string]handlerFunc{
		"POST /v3/packages":                    s.createPackage,
		"GET /v3/packages":                     s.listPackages,
		"GET /v3/packages/{guid}":              s.getPackage,
		"POST /v3/packages/{guid}/upload":      s.uploadPackage,
		"GET /v3/packages/{guid}/droplets":     s.listPackageDroplets,
		"POST /v3/builds":                      s.createBuild,
		"GET /v3/builds/{guid}":                s.getBuild,
		"GET /v3/droplets/{guid}":              s.getDroplet,
		"GET /v3/apps/{guid}/droplets":         s.listAppDroplets,
		"GET /v3/apps/{guid}/droplets/current": s.getAppCurrentDroplet,
		"GET /api/v1/info":                     s.logCacheInfo,
		"GET /api/v1/read/{source}":            s.readLogs,
	}
}
