rootProject.name = "edge-inbox"
