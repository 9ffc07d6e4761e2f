queue "reports" {
  concurrency = 0
}
