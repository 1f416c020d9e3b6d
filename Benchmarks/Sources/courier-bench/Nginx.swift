import BenchmarkSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// nginx from Debian's packages, on 127.0.0.1 and a free port, serving the fixtures (under `/slow/` too, at W7's
/// `limit_rate`) and taking PUTs under `/upload/` (its DAV module writes each body to a file, so an upload is
/// answered once all of it arrived). Each worker takes up to 32,768 connections: W7 opens 10,000 at once, and one
/// worker may accept most of them.
/// Uploads land in memory (`/dev/shm`) when it exists: on ext4, nginx spent more CPU creating and writing the
/// files than the clients spent sending them, and that cost varied from run to run.
final class Nginx {
    /// The port of each protocol served (one server block each, on the same files).
    let ports: [ServerProtocol: Int]
    let uploads: URL
    /// Over TLS: the server's self-signed certificate, which clients trust as their CA (`--ca-file`, `--cacert`).
    let certificate: URL?
    private let process: ChildProcess
    /// The folder under /dev/shm holding uploads and request bodies, removed on stop.
    private let memoryFolder: URL?

    init(root: URL, fixtures: URL, workers: String, protocols: [ServerProtocol] = [.http]) throws {
        let prefix = root.appendingPathComponent("nginx")
        let memory = URL(fileURLWithPath: "/dev/shm")
        memoryFolder =
            FileManager.default.isWritableFile(atPath: memory.path)
            ? memory.appendingPathComponent("courier-bench-\(getpid())") : nil
        let uploadRoot = memoryFolder ?? root
        uploads = uploadRoot.appendingPathComponent("uploads")
        // Same file system as the uploads, so that nginx's final step is a rename.
        let bodies = uploadRoot.appendingPathComponent("client-bodies")
        for folder in [prefix, uploads, bodies] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            // The workers may run as another user (nobody) when the harness is root.
            chmod(folder.path, 0o777)
        }
        var ports: [ServerProtocol: Int] = [:]
        for wire in protocols {
            ports[wire] = try Self.freePort()
        }
        self.ports = ports
        var tls = ""
        if protocols.contains(where: \.isTLS) {
            let (certificate, key) = try Self.makeCertificate(in: prefix)
            self.certificate = certificate
            tls = """
                    ssl_certificate \(certificate.path);
                    ssl_certificate_key \(key.path);
                    ssl_session_cache shared:SSL:10m;
                    http2_max_concurrent_streams 1000;
                """
        } else {
            certificate = nil
        }
        let uploadFolder = uploads
        let servers = protocols.map { wire -> String in
            let listen = "listen 127.0.0.1:\(ports[wire]!) backlog=4096" + [.http: "", .https: " ssl", .h2: " ssl http2"][wire]!
            return """
                    server {
                        \(listen);
                        root \(fixtures.path);
                        location /slow/ {
                            alias \(fixtures.path)/;
                            limit_rate \(Workload.slowBytesPerSecond);
                        }
                        location /upload/ {
                            alias \(uploadFolder.path)/;
                            dav_methods PUT;
                            client_max_body_size 8m;
                            client_body_buffer_size 1m;
                        }
                    }
                """
        }.joined(separator: "\n")
        let configuration = """
            worker_processes \(workers);
            daemon off;
            pid \(prefix.path)/nginx.pid;
            error_log \(prefix.path)/error.log warn;
            worker_rlimit_nofile 65536;
            events { worker_connections 32768; multi_accept on; }
            http {
                access_log off;
                sendfile on;
                tcp_nopush on;
                tcp_nodelay on;
                keepalive_requests 1000000;
                keepalive_timeout 120s;
                client_body_temp_path \(bodies.path);
                types { application/octet-stream bin; }
            \(tls)
            \(servers)
            }
            """
        let configurationFile = prefix.appendingPathComponent("nginx.conf")
        try configuration.write(to: configurationFile, atomically: true, encoding: .utf8)
        process = try ChildProcess(
            ["nginx", "-p", prefix.path, "-c", configurationFile.path, "-e", prefix.appendingPathComponent("error.log").path],
            stdout: prefix.appendingPathComponent("stdout.log").path,
            stderr: prefix.appendingPathComponent("stderr.log").path
        )
        try waitUntilListening(log: prefix.appendingPathComponent("error.log"))
    }

    func stop() {
        process.signal(SIGQUIT)
        _ = try? process.wait()
        if let memoryFolder {
            try? FileManager.default.removeItem(at: memoryFolder)
        }
    }

    /// Removes what the last run uploaded; returns how many files of `size` bytes there were.
    func takeUploads(size: Int) throws -> Int {
        let names = try FileManager.default.contentsOfDirectory(atPath: uploads.path)
        var matching = 0
        for name in names {
            let path = uploads.appendingPathComponent(name).path
            if (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue == size {
                matching += 1
            }
            try FileManager.default.removeItem(atPath: path)
        }
        return matching
    }

    private func waitUntilListening(log: URL) throws {
        for _ in 0..<100 {
            if ports.values.allSatisfy({ LoopbackSocket.accepts(port: $0) }) {
                return
            }
            usleep(50_000)
        }
        let errors = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        throw HarnessError("nginx did not listen on 127.0.0.1:\(ports.values.sorted()) within 5 s\n\(errors)")
    }

    /// A self-signed certificate for 127.0.0.1 (P-256, a day) and its key, made with openssl.
    private static func makeCertificate(in folder: URL) throws -> (certificate: URL, key: URL) {
        let certificate = folder.appendingPathComponent("server.pem")
        let key = folder.appendingPathComponent("server.key")
        let openssl = try ChildProcess(
            [
                "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                "-keyout", key.path, "-out", certificate.path,
            ],
            stdout: "/dev/null",
            stderr: folder.appendingPathComponent("openssl.log").path
        )
        try openssl.wait(deadline: .seconds(30))
        return (certificate, key)
    }

    /// A port nothing listens on right now (bound to 0, read back, closed).
    private static func freePort() throws -> Int {
        let (descriptor, port) = try LoopbackSocket.bind(listenBacklog: nil)
        close(descriptor)
        return port
    }
}
