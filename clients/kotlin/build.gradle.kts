// For consumers (an Android or JVM app including this module). CI does NOT run this file: no
// Gradle or Maven repository is reachable on this project's machines, so clients/kotlin/build.sh
// compiles the same sources with kotlinc and runs the same JUnit tests. Versions here match
// what build.sh uses: Kotlin 2.4.20, kotlinx-coroutines 1.8.0, OkHttp 3.x (binary-compatible
// with OkHttp 4.x at run time), JUnit 4.13; org.json as Android provides it.
import org.jetbrains.kotlin.gradle.dsl.JvmTarget

plugins {
    kotlin("jvm") version "2.4.20"
    `java-library`
}

group = "dev.edgegeonotify"
version = "0.1.0"

repositories { mavenCentral() }

java {
    sourceCompatibility = JavaVersion.VERSION_11
    targetCompatibility = JavaVersion.VERSION_11
}

kotlin {
    compilerOptions {
        jvmTarget.set(JvmTarget.JVM_11)
        allWarningsAsErrors.set(true)
        moduleName.set("edge-inbox")
    }
}

dependencies {
    api("com.squareup.okhttp3:okhttp:3.14.9")
    api("org.jetbrains.kotlinx:kotlinx-coroutines-core:1.8.0")
    // org.json is part of Android; a plain JVM app adds an implementation (build.sh uses Debian's
    // libandroid-json-java, Android's own code). Only the API Android has is called.
    compileOnly("org.json:json:20231013")
    testImplementation("org.json:json:20231013")
    testImplementation(kotlin("test-junit"))
    testImplementation("junit:junit:4.13.2")
}

tasks.test {
    // The conformance vectors live beside this module (../conformance).
    systemProperty("inbox.root", rootDir.resolve("../..").canonicalPath)
    // These need the worker and the local stack: run `bash clients/kotlin/build.sh` instead.
    filter {
        excludeTestsMatching("*IntegrationTest")
        excludeTestsMatching("*ContractTest")
    }
}
