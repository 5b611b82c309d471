package dev.edgegeonotify.inbox

/**
 * A small JSON reader/writer, so the library needs nothing beyond OkHttp and coroutines (Android
 * has org.json, the JVM does not; one tiny parser on both keeps behaviour identical).
 *
 * Values: `null`, [Boolean], [Long] (integers that fit) or [Double], [String],
 * `List<Any?>`, `Map<String, Any?>` (insertion-ordered).
 */
object Json {
    class ParseException(message: String) : IllegalArgumentException(message)

    fun parse(text: String): Any? {
        val p = Parser(text)
        p.ws()
        val v = p.value()
        p.ws()
        if (p.i != text.length) throw ParseException("trailing characters at ${p.i}")
        return v
    }

    fun write(v: Any?): String = StringBuilder().also { write(it, v) }.toString()

    internal fun write(sb: StringBuilder, v: Any?) {
        when (v) {
            null -> sb.append("null")
            is Boolean -> sb.append(v)
            is Int, is Long, is Short, is Byte -> sb.append(v)
            is Double -> if (v % 1.0 == 0.0 && kotlin.math.abs(v) < 1e15) sb.append(v.toLong()) else sb.append(v)
            is Float -> write(sb, v.toDouble())
            is String -> quote(sb, v)
            is Map<*, *> -> {
                sb.append('{')
                var first = true
                for ((k, x) in v) {
                    if (!first) sb.append(',')
                    first = false
                    quote(sb, k.toString())
                    sb.append(':')
                    write(sb, x)
                }
                sb.append('}')
            }
            is Iterable<*> -> {
                sb.append('[')
                var first = true
                for (x in v) {
                    if (!first) sb.append(',')
                    first = false
                    write(sb, x)
                }
                sb.append(']')
            }
            is JsonModel -> v.writeJson(sb)
            else -> throw IllegalArgumentException("not a JSON value: ${v::class}")
        }
    }

    internal fun quote(sb: StringBuilder, s: String) {
        sb.append('"')
        for (c in s) {
            when (c) {
                '"' -> sb.append("\\\"")
                '\\' -> sb.append("\\\\")
                '\n' -> sb.append("\\n")
                '\r' -> sb.append("\\r")
                '\t' -> sb.append("\\t")
                else -> if (c < ' ') sb.append(String.format("\\u%04x", c.code)) else sb.append(c)
            }
        }
        sb.append('"')
    }

    private class Parser(val s: String) {
        var i = 0

        fun ws() {
            while (i < s.length && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) i++
        }

        fun fail(what: String): Nothing = throw ParseException("$what at $i")

        fun value(): Any? {
            if (i >= s.length) fail("unexpected end")
            return when (s[i]) {
                '{' -> obj()
                '[' -> arr()
                '"' -> str()
                't' -> lit("true", true)
                'f' -> lit("false", false)
                'n' -> lit("null", null)
                else -> num()
            }
        }

        fun lit(word: String, v: Any?): Any? {
            if (!s.startsWith(word, i)) fail("bad literal")
            i += word.length
            return v
        }

        fun obj(): Map<String, Any?> {
            val m = LinkedHashMap<String, Any?>()
            i++
            ws()
            if (i < s.length && s[i] == '}') { i++; return m }
            while (true) {
                ws()
                if (i >= s.length || s[i] != '"') fail("expected a key")
                val k = str()
                ws()
                if (i >= s.length || s[i] != ':') fail("expected ':'")
                i++
                ws()
                m[k] = value()
                ws()
                if (i >= s.length) fail("unexpected end")
                when (s[i++]) {
                    ',' -> continue
                    '}' -> return m
                    else -> { i--; fail("expected ',' or '}'") }
                }
            }
        }

        fun arr(): List<Any?> {
            val l = ArrayList<Any?>()
            i++
            ws()
            if (i < s.length && s[i] == ']') { i++; return l }
            while (true) {
                ws()
                l.add(value())
                ws()
                if (i >= s.length) fail("unexpected end")
                when (s[i++]) {
                    ',' -> continue
                    ']' -> return l
                    else -> { i--; fail("expected ',' or ']'") }
                }
            }
        }

        fun str(): String {
            i++
            val sb = StringBuilder()
            while (true) {
                if (i >= s.length) fail("unterminated string")
                val c = s[i++]
                when (c) {
                    '"' -> return sb.toString()
                    '\\' -> {
                        if (i >= s.length) fail("bad escape")
                        when (val e = s[i++]) {
                            '"', '\\', '/' -> sb.append(e)
                            'b' -> sb.append('\b')
                            'f' -> sb.append('\u000c')
                            'n' -> sb.append('\n')
                            'r' -> sb.append('\r')
                            't' -> sb.append('\t')
                            'u' -> {
                                if (i + 4 > s.length) fail("bad \\u escape")
                                sb.append(s.substring(i, i + 4).toInt(16).toChar())
                                i += 4
                            }
                            else -> fail("bad escape")
                        }
                    }
                    else -> sb.append(c)
                }
            }
        }

        fun num(): Any {
            val start = i
            if (i < s.length && s[i] == '-') i++
            while (i < s.length && s[i].isDigit()) i++
            var integer = true
            if (i < s.length && s[i] == '.') { integer = false; i++; while (i < s.length && s[i].isDigit()) i++ }
            if (i < s.length && (s[i] == 'e' || s[i] == 'E')) {
                integer = false
                i++
                if (i < s.length && (s[i] == '+' || s[i] == '-')) i++
                while (i < s.length && s[i].isDigit()) i++
            }
            val t = s.substring(start, i)
            if (t.isEmpty() || t == "-") fail("bad number")
            if (integer) t.toLongOrNull()?.let { return it }
            return t.toDoubleOrNull() ?: fail("bad number")
        }
    }
}

/** A typed model that renders itself as a JSON tree (see [Json.write]). */
interface JsonModel {
    fun toJson(): Map<String, Any?>

    /** Appends this model's JSON text; a model on a hot path writes its fields directly. */
    fun writeJson(sb: StringBuilder) = Json.write(sb, toJson())
}

internal fun Map<String, Any?>.str(k: String): String =
    this[k] as? String ?: throw Json.ParseException("field '$k' must be a string")

internal fun Map<String, Any?>.strOrNull(k: String): String? = this[k] as? String

internal fun Map<String, Any?>.long(k: String): Long = when (val v = this[k]) {
    is Long -> v
    is Int -> v.toLong()
    is Double -> v.toLong()
    else -> throw Json.ParseException("field '$k' must be a number")
}

internal fun Map<String, Any?>.bool(k: String): Boolean =
    this[k] as? Boolean ?: throw Json.ParseException("field '$k' must be a boolean")

@Suppress("UNCHECKED_CAST")
internal fun Map<String, Any?>.obj(k: String): Map<String, Any?> =
    this[k] as? Map<String, Any?> ?: throw Json.ParseException("field '$k' must be an object")

@Suppress("UNCHECKED_CAST")
internal fun Map<String, Any?>.list(k: String): List<Any?> =
    this[k] as? List<Any?> ?: throw Json.ParseException("field '$k' must be an array")

@Suppress("UNCHECKED_CAST")
internal fun Any?.asObj(): Map<String, Any?> =
    this as? Map<String, Any?> ?: throw Json.ParseException("expected an object")
