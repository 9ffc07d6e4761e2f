queue "api" {
  max_running = -1
  rate_limit  = "ten/s"
}
