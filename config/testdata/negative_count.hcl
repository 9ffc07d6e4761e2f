queue "reports" {
  max_retries = -1
}
