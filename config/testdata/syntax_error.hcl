queue "reports" {
  concurrency = 
}
