defaults {
  timeout = "10 minutes"
}
