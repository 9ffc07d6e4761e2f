job "report" {
  schedule = "0 * * * *"
  command  = "report.sh"
  overlap  = "allow"
  unique   = true
  catch_up = "all"
}
