import Foundation

/// Parses the three HTTP-date forms RFC 9110 §5.6.7 says a recipient must accept, without
/// locale-dependent formatters: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete
/// RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`).
enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let shortDays = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    private static let longDays = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

    /// `parse`, with RFC 850's century taken from the year `now` falls in (UTC).
    static func parse(_ text: String, near now: Date) -> Double? {
        let year = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: now).year
        return parse(text, referenceYear: year ?? 2000)
    }

    /// Seconds since the Unix epoch, or nil when `text` is not an HTTP-date.
    /// `referenceYear` resolves RFC 850's two-digit years: a year more than 50 years in the
    /// future is taken to be in the past century (RFC 9110).
    static func parse(_ text: String, referenceYear: Int) -> Double? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: true).map { $0.lowercased() }
        switch parts.count {
        case 6:  // IMF-fixdate: "sun," dd mon yyyy hh:mm:ss gmt
            guard parts[0].hasSuffix(","), shortDays.contains(String(parts[0].dropLast())), isGMT(parts[5]),
                let day = number(parts[1], digits: 2...2), let month = month(parts[2]),
                let year = number(parts[3], digits: 4...4)
            else { return nil }
            return epochSeconds(year: year, month: month, day: day, time: parts[4])
        case 4:  // RFC 850: "sunday," dd-mon-yy hh:mm:ss gmt
            let date = parts[1].split(separator: "-", omittingEmptySubsequences: false).map(String.init)
            guard parts[0].hasSuffix(","), longDays.contains(String(parts[0].dropLast())), isGMT(parts[3]),
                date.count == 3, let day = number(date[0], digits: 2...2), let month = month(date[1]),
                let shortYear = number(date[2], digits: 2...2)
            else { return nil }
            var year = (referenceYear / 100) * 100 + shortYear
            if year > referenceYear + 50 { year -= 100 }
            return epochSeconds(year: year, month: month, day: day, time: parts[2])
        case 5:  // asctime: sun mon d hh:mm:ss yyyy
            guard shortDays.contains(parts[0]), let month = month(parts[1]), let day = number(parts[2], digits: 1...2),
                let year = number(parts[4], digits: 4...4)
            else { return nil }
            return epochSeconds(year: year, month: month, day: day, time: parts[3])
        default:
            return nil
        }
    }

    private static func isGMT(_ zone: String) -> Bool { zone == "gmt" || zone == "utc" }

    private static func month(_ text: String) -> Int? {
        months.firstIndex(of: text).map { $0 + 1 }
    }

    private static func number(_ text: String, digits: ClosedRange<Int>) -> Int? {
        guard digits.contains(text.count), text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(text)
    }

    private static func epochSeconds(year: Int, month: Int, day: Int, time: String) -> Double? {
        let fields = time.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 3, let hour = number(fields[0], digits: 2...2),
            let minute = number(fields[1], digits: 2...2), let second = number(fields[2], digits: 2...2),
            hour < 24, minute < 60, second <= 60, day >= 1, day <= daysIn(month: month, year: year)
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return Double(days * 86_400 + hour * 3600 + minute * 60 + min(second, 59))
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's algorithm).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let shifted = month <= 2 ? year - 1 : year
        let era = (shifted >= 0 ? shifted : shifted - 399) / 400
        let yearOfEra = shifted - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
