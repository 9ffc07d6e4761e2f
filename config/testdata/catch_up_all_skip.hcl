job "report" {
  schedule = "0 * * * *"
  command  = "report.sh"
  catch_up = "all"
}
