package cfapi

// appRoutes are the endpoints of apps, their processes and what the cf CLI's app summary reads.
func (s *server) appRoutes() map[string]handlerFunc {
	return map[string]handlerFunc{}
}
