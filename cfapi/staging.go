package cfapi

// stagingRoutes are the endpoints of packages, builds, droplets and staging logs.
func (s *server) stagingRoutes() map[string]handlerFunc {
	return map[string]handlerFunc{}
}
